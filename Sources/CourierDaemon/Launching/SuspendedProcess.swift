import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Continuing an app's process that its lifecycle suspends, for work courierd has for it (a wake, a session's
/// events).
///
/// The app says it is suspended (`appState`) just before it stops itself with SIGSTOP; a SIGCONT sent between the
/// two would be lost (the stop that follows discards it) and leave the process stopped with its work unread. So the
/// continue waits until the kernel reports the process stopped: looked at now, then again every 5 ms while
/// `stillSuspended` holds, for at most 2 s (the window is the few instructions between the report and the stop; a
/// program whose lifecycle does not stop the process, `ProcessControl` replaced, reads its work itself). Nothing runs
/// while no app has said it is suspended: courierd never looks at processes on a timer.
enum SuspendedProcess {
    /// How long a process said to be suspended is waited for to stop.
    static let stopWindow: TimeInterval = 2
    static let lookInterval: DispatchTimeInterval = .milliseconds(5)

    /// SIGCONT to `pid` once it is stopped (on the caller's thread when it is already, else on a global queue),
    /// while `stillSuspended()`. Returns at once.
    static func continueOnceStopped(
        _ pid: pid_t,
        while stillSuspended: @escaping @Sendable () -> Bool,
        deadline: Date = Date().addingTimeInterval(stopWindow)
    ) {
        guard pid > 0, stillSuspended() else {
            return
        }
        if ProcessState.isStopped(pid) {
            kill(pid, SIGCONT)
            return
        }
        guard Date() < deadline, ProcessState.of(pid) != nil else {
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + lookInterval) {
            continueOnceStopped(pid, while: stillSuspended, deadline: deadline)
        }
    }
}
