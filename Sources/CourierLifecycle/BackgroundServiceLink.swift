import CourierConcurrency

/// What the lifecycle needs from courierd for background fetch and remote notifications, implemented by the Courier
/// module (which speaks the daemon's protocol; this module cannot depend on it).
///
/// The application finds the implementation by name (``BackgroundServiceLinks/typeName``) the first time it needs one
/// — when it asks for a fetch interval other than never, registers for remote notifications, or was launched for a
/// fetch or a push — so an app gets it by linking Courier, with nothing to install. A process that does not link
/// Courier has none: registering fails with ``BackgroundServiceUnavailable``.
package protocol BackgroundServiceLinking: AnyObject, Sendable {
    /// Connects `application` to courierd (starting it when none runs). Called once per process, off the callback
    /// queue.
    static func connect(_ application: Application) -> Self

    /// The fetch interval or the push registration changed: tell courierd. With `deliveringToken` (the app called
    /// `registerForRemoteNotifications()`), the device token or the failure goes to
    /// ``Application/didRegisterForRemoteNotifications(_:)``.
    func registrationChanged(fetchInterval: BackgroundFetchInterval, remoteNotifications: Bool, deliveringToken: Bool)

    /// A fetch or push handler finished (or overran): tell courierd, which schedules the next one from it.
    func finished(_ work: BackgroundWork, report: BackgroundFetchReport)

    /// courierd's process (the peer of the link's connection), which sends SIGCONT to resume the suspended
    /// application for background work; nil while not connected.
    var daemonProcess: Int32? { get }

    /// How much the link has received so far, taken before the process stops.
    func receiveMark() -> UInt64

    /// Whether courierd has sent anything since `mark` (read already, or waiting to be read). courierd writes a wake
    /// before it resumes a stopped process, so right after a continue this tells courierd's continue from the user's.
    func hasReceived(since mark: UInt64) -> Bool
}

/// Background work courierd asked for.
package struct BackgroundWork: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case fetch
        case remoteNotification
    }

    package var kind: Kind
    /// courierd's number for the wake; nil for work the process was launched for.
    package var wake: UInt64?

    package init(kind: Kind, wake: UInt64?) {
        self.kind = kind
        self.wake = wake
    }
}

/// The process's link to courierd, made on first use.
package enum BackgroundServiceLinks {
    /// The implementation the application looks for.
    package static let typeName = "Courier.BackgroundServiceLink"

    private static let link = LockedValue<(any BackgroundServiceLinking)?>(nil)
    /// Held while a link is made, so that callers racing to make one wait for it (the link lock is not held while
    /// connecting: ``existing`` stays quick); says whether the missing Courier module was logged.
    private static let making = LockedValue(false)

    /// The link of `application` (the shared one), made now if it was not; nil when Courier is not linked in.
    static func link(for application: Application) -> (any BackgroundServiceLinking)? {
        if let existing = self.existing {
            return existing
        }
        return self.making.withLock { warnedOfNoLink in
            if let existing = self.existing {
                return existing
            }
            guard let type = _typeByName(self.typeName) as? any BackgroundServiceLinking.Type else {
                if !warnedOfNoLink {
                    warnedOfNoLink = true
                    application.logger.notice("no link to courierd: the Courier module is not linked into this program")
                }
                return nil
            }
            let made = type.connect(application)
            self.link.withLock { $0 = made }
            return made
        }
    }

    /// The link, if one was made.
    static var existing: (any BackgroundServiceLinking)? {
        self.link.withLock { $0 }
    }
}

/// Registering for remote notifications failed: this program does not link the Courier module, which talks to
/// courierd.
public struct BackgroundServiceUnavailable: Error, Sendable, CustomStringConvertible {
    public var description: String {
        "remote notifications need courierd: link the Courier module into this program"
    }
}
