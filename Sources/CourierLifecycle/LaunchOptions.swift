public import struct Foundation.Data

/// How and why the process was launched, passed to
/// ``ApplicationDelegate/applicationDidFinishLaunching(_:options:)``.
///
/// A launcher that starts the program to do work in the background (`courierd` relaunching an
/// application to deliver background-transfer events, a fetch scheduler, a push delivery) sets the
/// environment variable ``environmentVariable`` (`COURIER_BACKGROUND_LAUNCH`) to the reason, for
/// example `COURIER_BACKGROUND_LAUNCH=fetch`. An empty value counts as "not set".
/// ``Application/main(delegate:configuration:)`` reads it, then removes it from the environment so
/// that child processes do not inherit it. An application launched into the background calls
/// `applicationDidFinishLaunching`, then `applicationDidEnterBackground`, with its background
/// time budget already running; it never becomes active unless it is brought to the foreground
/// (SIGCONT or ``Application/enterForeground()``).
public struct LaunchOptions: Sendable, Hashable {
    /// The environment variable a launcher sets to launch the program into the background.
    public static let environmentVariable = "COURIER_BACKGROUND_LAUNCH"

    /// Why the program was launched into the background, or `nil` for an ordinary foreground launch.
    public var backgroundLaunchReason: BackgroundLaunchReason?

    /// The environment variable that carries a push's JSON payload to a program launched for it
    /// (`COURIER_BACKGROUND_LAUNCH=remote-notification`).
    public static let remoteNotificationVariable = "COURIER_REMOTE_NOTIFICATION"

    /// The push a `remote-notification` launch is for (its JSON payload), as iOS's
    /// `UIApplication.LaunchOptionsKey.remoteNotification`;
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` follows the launch.
    public var remoteNotification: Data?

    /// Whether the program was launched into the background.
    public var launchedIntoBackground: Bool {
        self.backgroundLaunchReason != nil
    }

    /// An ordinary launch into the foreground.
    public static let foreground = LaunchOptions(backgroundLaunchReason: nil)

    public init(backgroundLaunchReason: BackgroundLaunchReason? = nil, remoteNotification: Data? = nil) {
        self.backgroundLaunchReason = backgroundLaunchReason
        self.remoteNotification = remoteNotification
    }

    /// Reads the launch options from an environment (as `ProcessInfo.processInfo.environment` gives it).
    public init(environment: [String: String]) {
        if let value = environment[Self.environmentVariable], !value.isEmpty {
            self.backgroundLaunchReason = BackgroundLaunchReason(rawValue: value)
        } else {
            self.backgroundLaunchReason = nil
        }
        if self.backgroundLaunchReason == .remoteNotification, let payload = environment[Self.remoteNotificationVariable] {
            self.remoteNotification = Data(payload.utf8)
        }
    }
}

/// Why a program was launched into the background: the value of `COURIER_BACKGROUND_LAUNCH`.
///
/// Any non-empty string is accepted; the well-known reasons below are the ones Courier's own
/// launchers use.
public struct BackgroundLaunchReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `transfer`: the background transfer service relaunched the program to deliver session events.
    public static let backgroundTransfer = BackgroundLaunchReason(rawValue: "transfer")

    /// `urlsession:<identifier>`: courierd relaunched the program because the background session `identifier` has
    /// events it has not heard; ``ApplicationDelegate/application(_:handleEventsForBackgroundURLSession:completionHandler:)``
    /// follows the launch.
    public static func backgroundURLSession(_ identifier: String) -> BackgroundLaunchReason {
        BackgroundLaunchReason(rawValue: "urlsession:\(identifier)")
    }

    /// The background session of a `urlsession:<identifier>` launch; nil for other reasons.
    public var urlSessionIdentifier: String? {
        guard rawValue.hasPrefix("urlsession:") else {
            return nil
        }
        let identifier = rawValue.dropFirst("urlsession:".count)
        return identifier.isEmpty ? nil : String(identifier)
    }
    /// `fetch`: launched for a background fetch.
    public static let backgroundFetch = BackgroundLaunchReason(rawValue: "fetch")
    /// `remote-notification`: launched to handle a silent push notification.
    public static let remoteNotification = BackgroundLaunchReason(rawValue: "remote-notification")

    public var description: String {
        self.rawValue
    }
}
