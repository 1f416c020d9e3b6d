import Foundation

extension Application {
    /// The keys of the launch options dictionary of
    /// ``ApplicationDelegate/application(_:didFinishLaunchingWithOptions:)``, as `UIApplication.LaunchOptionsKey`.
    public struct LaunchOptionsKey: RawRepresentable, Hashable, Sendable {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The push the process was launched for: its JSON payload as a `[AnyHashable: Any]` dictionary.
        public static let remoteNotification = LaunchOptionsKey(rawValue: "remoteNotification")
        /// Why courierd launched the process into the background: a ``BackgroundLaunchReason``. (iOS has no such key:
        /// a background session's launch is told by `handleEventsForBackgroundURLSession` alone, as here too.)
        public static let backgroundLaunchReason = LaunchOptionsKey(rawValue: "backgroundLaunchReason")
    }

    /// `setMinimumBackgroundFetchInterval(_:)`'s "as often as courierd allows", as
    /// `UIApplication.backgroundFetchIntervalMinimum`.
    public static let backgroundFetchIntervalMinimum = BackgroundFetchInterval.minimum
    /// `setMinimumBackgroundFetchInterval(_:)`'s "never", as `UIApplication.backgroundFetchIntervalNever`.
    public static let backgroundFetchIntervalNever = BackgroundFetchInterval.never

    /// `setMinimumBackgroundFetchInterval(_:)` with a number of seconds, as UIKit's `TimeInterval` form.
    public func setMinimumBackgroundFetchInterval(_ seconds: Double) {
        self.setMinimumBackgroundFetchInterval(.seconds(seconds))
    }
}

extension LaunchOptions {
    /// The options as the dictionary of ``ApplicationDelegate/application(_:didFinishLaunchingWithOptions:)``: nil
    /// for an ordinary launch, as on iOS.
    public var dictionary: [Application.LaunchOptionsKey: Any]? {
        var options: [Application.LaunchOptionsKey: Any] = [:]
        if let reason = backgroundLaunchReason {
            options[.backgroundLaunchReason] = reason
        }
        if let payload = remoteNotification {
            options[.remoteNotification] = Application.userInfo(ofPush: payload) as [AnyHashable: Any]
        }
        return options.isEmpty ? nil : options
    }
}
