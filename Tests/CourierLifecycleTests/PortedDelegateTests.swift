import CourierConcurrency
import CourierLifecycle
import Dispatch
import Foundation
import Testing

/// A delegate written as for iOS (`didFinishLaunchingWithOptions` with a dictionary, `didReceiveRemoteNotification`
/// with `[AnyHashable: Any]`) is called as a `UIApplicationDelegate` would be.
@Suite("the iOS shapes of the delegate")
struct PortedDelegateTests {
    /// Implements only the UIKit shapes, as a port with type renames only does.
    final class PortedDelegate: ApplicationDelegate, Sendable {
        let launches = LockedValue<[[String: String]?]>([])
        /// The `episode` of each push's `userInfo`.
        let pushes = LockedValue<[Int?]>([])

        func application(
            _ application: Application,
            didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
        ) -> Bool {
            application.setMinimumBackgroundFetchInterval(Application.backgroundFetchIntervalMinimum)
            let described = launchOptions.map { options in
                Dictionary(uniqueKeysWithValues: options.map { ($0.key.rawValue, "\($0.value)") })
            }
            launches.withLock { $0.append(described) }
            return true
        }

        func application(
            _ application: Application,
            didReceiveRemoteNotification userInfo: [AnyHashable: Any],
            fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
        ) {
            let episode = userInfo["episode"] as? Int
            pushes.withLock { $0.append(episode) }
            completionHandler(.newData)
        }
    }

    static func application() -> (Application, DispatchQueue) {
        let queue = DispatchQueue(label: "courier.lifecycle.tests.ported")
        let control = RecordingProcessControl()
        let application = Application(
            configuration: .init(
                clock: ManualLifecycleClock(now: .seconds(1000)),
                callbackQueue: queue,
                processControl: control.processControl
            )
        )
        return (application, queue)
    }

    @Test("an ordinary launch: didFinishLaunchingWithOptions with nil, as UIKit passes")
    func foregroundLaunch() {
        let (application, queue) = Self.application()
        let delegate = PortedDelegate()
        application.launch(delegate: delegate, options: .foreground)
        for _ in 0..<4 { queue.sync {} }
        #expect(delegate.launches.withLock { $0 } == [nil])
        #expect(application.minimumBackgroundFetchInterval == .minimum)
    }

    @Test("launched for a push: the payload under .remoteNotification, then the [AnyHashable: Any] handler")
    func pushLaunch() {
        let (application, queue) = Self.application()
        let delegate = PortedDelegate()
        let payload = Data(#"{"aps":{"content-available":1},"episode":42}"#.utf8)
        application.launch(
            delegate: delegate,
            options: LaunchOptions(backgroundLaunchReason: .remoteNotification, remoteNotification: payload)
        )
        for _ in 0..<4 { queue.sync {} }
        let launches = delegate.launches.withLock { $0 }
        #expect(launches.count == 1)
        #expect(launches.first??["backgroundLaunchReason"] == "remote-notification")
        #expect(launches.first??["remoteNotification"]?.contains("episode") == true)
        #expect(delegate.pushes.withLock { $0 } == [42])
    }
}
