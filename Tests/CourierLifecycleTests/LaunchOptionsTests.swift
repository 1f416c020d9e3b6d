import CourierLifecycle
import Testing

@Suite("LaunchOptions")
struct LaunchOptionsTests {
    @Test("COURIER_BACKGROUND_LAUNCH says the process was launched into the background, and why")
    func fromEnvironment() {
        #expect(LaunchOptions.environmentVariable == "COURIER_BACKGROUND_LAUNCH")
        let fetch = LaunchOptions(environment: ["COURIER_BACKGROUND_LAUNCH": "fetch", "HOME": "/root"])
        #expect(fetch.launchedIntoBackground)
        #expect(fetch.backgroundLaunchReason == .backgroundFetch)

        let custom = LaunchOptions(environment: ["COURIER_BACKGROUND_LAUNCH": "cron"])
        #expect(custom.backgroundLaunchReason?.rawValue == "cron")

        #expect(!LaunchOptions(environment: [:]).launchedIntoBackground)
        #expect(!LaunchOptions(environment: ["COURIER_BACKGROUND_LAUNCH": ""]).launchedIntoBackground)
        #expect(LaunchOptions(environment: [:]) == .foreground)
    }

    @Test("well-known reasons")
    func reasons() {
        #expect(BackgroundLaunchReason.backgroundTransfer.rawValue == "transfer")
        #expect(BackgroundLaunchReason.backgroundFetch.rawValue == "fetch")
        #expect(BackgroundLaunchReason.remoteNotification.rawValue == "remote-notification")
    }
}
