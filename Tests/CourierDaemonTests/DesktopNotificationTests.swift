import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A background download that finishes while its app is not running is shown as a desktop notification: a real
/// session bus (a private `dbus-daemon`) watched by `dbus-monitor`, which sees the `Notify` call courierd's helper
/// makes (no notification service runs, so the call itself is answered with an error nobody reads).
@Suite("courierd desktop notifications", .blockingWaits, .serialized)
struct DesktopNotificationTests {
    static var toolsPresent: Bool {
        ["/usr/bin/dbus-daemon", "/usr/bin/dbus-monitor", "/usr/bin/gdbus"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    @Test(
        "a download finished while its app is away: Notify on the session bus; none with --no-notifications",
        .enabled(if: toolsPresent, "needs dbus-daemon, dbus-monitor and gdbus (scripts/test.sh installs them)"),
        arguments: [true, false]
    )
    func finishedWhileAway(notifying: Bool) async throws {
        let server = try await TestServer.start()
        let bus = try PrivateBus()
        let watch = try NotificationWatch(bus)
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let daemon = Daemon(arguments: notifying ? [] : ["--no-notifications"], environment: environment)
        defer { daemon.cleanup() }
        try daemon.start()
        // Give dbus-monitor time to become a monitor before anything is sent.
        usleep(300_000)

        // The app creates the task and goes away; the download finishes while nobody holds the session.
        var (client, _) = try Client.opening(BackgroundTransferTests.session, on: daemon)
        try BackgroundTransferTests.create(
            BackgroundTransferTests.download(1, server.url("/bytes/300000?trickle=65536&interval=50"), description: "episode-42"),
            on: &client
        )
        client.close()

        let deadline = Date().addingTimeInterval(notifying ? 20 : 5)
        var text = ""
        while Date() < deadline {
            text = watch.text
            if text.contains("Downloaded episode-42") {
                break
            }
            usleep(100_000)
        }
        if notifying {
            #expect(text.contains("member=Notify"), "dbus-monitor saw: \(text)")
            #expect(text.contains("string \"com.example.podcasts\""))
            #expect(text.contains("string \"Downloaded episode-42\""))
        } else {
            #expect(!text.contains("member=Notify"), "dbus-monitor saw: \(text)")
        }
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test(
        "three downloads finished while their app is away: one notification for the batch, once the last one ends",
        .enabled(if: toolsPresent, "needs dbus-daemon, dbus-monitor and gdbus (scripts/test.sh installs them)")
    )
    func batch() async throws {
        let server = try await TestServer.start()
        let bus = try PrivateBus()
        let watch = try NotificationWatch(bus)
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let daemon = Daemon(environment: environment)
        defer { daemon.cleanup() }
        try daemon.start()
        usleep(300_000)

        var (client, _) = try Client.opening(BackgroundTransferTests.session, on: daemon)
        // Ending about 0.5 s, 1 s and 2 s in.
        for (task, size) in [(1, 40_000), (2, 80_000), (3, 160_000)] {
            let url = server.url("/bytes/\(size)?seed=\(task)&trickle=4096&interval=50")
            try BackgroundTransferTests.create(
                BackgroundTransferTests.download(task, url, description: "/downloads/episode-\(task).mp3"),
                on: &client
            )
        }
        client.close()

        let deadline = Date().addingTimeInterval(20)
        var text = ""
        while Date() < deadline, !text.contains("Downloaded 3 files") {
            text = watch.text
            usleep(100_000)
        }
        usleep(500_000)
        text = watch.text
        #expect(
            text.contains("string \"Downloaded 3 files: episode-1.mp3, episode-2.mp3, episode-3.mp3\""),
            "dbus-monitor saw: \(text)"
        )
        #expect(text.components(separatedBy: "member=Notify").count - 1 == 1, "dbus-monitor saw: \(text)")
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }
}
