#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What suspending, exiting and being terminated by the watchdog do to the process.
///
/// ``system`` does the real thing. Tests and embedding programs inject their own (through
/// ``Application/Configuration/processControl``) so that a unit test does not stop or kill the test
/// runner, or so that "suspended" means something else in a program that must keep running.
///
/// The closures are called without any lock held:
/// - ``suspend`` on the callback queue, once each time the application becomes suspended (in the
///   background, `applicationDidEnterBackground` returned, no background task left). It may block
///   until the process is continued, as ``system``'s does.
/// - ``exit`` on the callback queue, once, after `applicationWillTerminate` returned, when
///   termination was asked for with ``Application/terminate()`` or SIGTERM.
/// - ``terminate`` on the clock's timer queue (never the callback queue, which may be the one that is
///   stuck), once, when the watchdog fires. After it returns the application stays terminated and
///   runs no further delegate methods, expiration handlers or transitions.
public struct ProcessControl: Sendable {
    /// Suspends the process. ``system``: `raise(SIGSTOP)`, which returns once the process is
    /// continued (SIGCONT).
    public var suspend: @Sendable () -> Void
    /// Exits the process after a clean termination. ``system``: flushes stdio and calls `exit(3)`.
    public var exit: @Sendable (Application.ExitStatus) -> Void
    /// Terminates the process from the watchdog. ``system``: writes the report to standard error
    /// and calls `_exit(2)` with the report's exit status.
    public var terminate: @Sendable (WatchdogReport) -> Void

    public init(
        suspend: @escaping @Sendable () -> Void,
        exit: @escaping @Sendable (Application.ExitStatus) -> Void,
        terminate: @escaping @Sendable (WatchdogReport) -> Void
    ) {
        self.suspend = suspend
        self.exit = exit
        self.terminate = terminate
    }

    /// The real process: SIGSTOP to suspend, `exit(3)` to exit, report on stderr and `_exit(2)` for
    /// the watchdog.
    public static let system = ProcessControl(
        suspend: {
            _ = raise(SIGSTOP)
        },
        exit: { status in
            fflush(nil)
            exitProcess(status.rawValue)
        },
        terminate: { report in
            // Unbuffered and lock-free: whatever is stuck may hold the stdio locks.
            writeToStandardError(report.description + "\n")
            _exit(report.exitStatus.rawValue)
        }
    )
}

/// `exit(3)`, under a name that the `exit` member of ``ProcessControl`` does not shadow.
private func exitProcess(_ status: Int32) -> Never {
    exit(status)
}

/// Writes `text` to file descriptor 2 with `write(2)`, retrying on EINTR and short writes.
func writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { buffer in
            write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
        }
        if written > 0 {
            offset += written
        } else if written < 0 && errno == EINTR {
            continue
        } else {
            return
        }
    }
}
