/// Where the application stands in its lifecycle, as `UIApplication.State` does on iOS.
///
/// Read it through ``Application/applicationState`` from any thread. The states follow docs/lifecycle.md:
/// not running → inactive → active ⇄ background → suspended (and terminated). `suspended` and
/// `terminated` are not separate values here, as on iOS: a suspended application reports
/// ``background`` (and ``Application/isSuspended`` is `true`), and a terminated one runs no code.
public enum ApplicationState: Sendable, Hashable, CustomStringConvertible {
    /// In the foreground and receiving events.
    case active
    /// In the foreground but not receiving events: launching, or moving between the foreground
    /// and the background (during `applicationWillResignActive` and `applicationWillEnterForeground`).
    case inactive
    /// In the background: the background time budget is running, and the process is suspended
    /// (really stopped, with the default ``ProcessControl``) as soon as no background task remains.
    case background

    public var description: String {
        switch self {
        case .active: "active"
        case .inactive: "inactive"
        case .background: "background"
        }
    }
}
