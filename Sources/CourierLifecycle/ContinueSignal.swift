import CourierIPC
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SIGCONT with its sender: a `SA_SIGINFO` handler writes the sending process's pid into a pipe (`write` is
/// async-signal-safe), and a dispatch read source hands each to ``Application/continued(by:)``: a continue by anyone
/// but courierd (`fg`, `kill -CONT`) brings the application to the foreground. courierd's continues (for background
/// work) are told apart where the suspended process resumes (``Application/suspendProcess()``), as the handler may
/// run late (ThreadSanitizer holds signals back), and two SIGCONTs that arrive while the process is stopped are one
/// signal with one sender.
enum ContinueSignal {
    /// The pipe's write end, for the handler: set once, before the handler is installed, never changed.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Installs the handler (once per process) and returns the source that reads the pipe; nil when no pipe can be
    /// made (SIGCONT then only continues the process).
    static func install(on queue: DispatchQueue, for application: Application) -> (any DispatchSourceRead)? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            application.logger.error("no pipe for SIGCONT: continuing will not bring the application to the foreground")
            return nil
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        self.writeEnd = ends[1]
        let source = DispatchSource.makeReadSource(fileDescriptor: ends[0], queue: queue)
        source.setEventHandler { [weak application] in
            var senders: [pid_t] = []
            var pid: pid_t = 0
            while read(ends[0], &pid, MemoryLayout<pid_t>.size) == MemoryLayout<pid_t>.size {
                senders.append(pid)
            }
            guard let application, !senders.isEmpty else { return }
            // A user's continue among them wins: the user wants the application in front.
            application.continued(by: senders.first { $0 != DaemonConnections.daemonProcess } ?? senders[0])
        }
        source.resume()
        var action = sigaction()
        action.__sigaction_handler.sa_sigaction = { _, info, _ in
            var sender = info?.pointee._sifields._kill.si_pid ?? 0
            _ = write(ContinueSignal.writeEnd, &sender, MemoryLayout<pid_t>.size)
        }
        action.sa_flags = SA_SIGINFO | SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(SIGCONT, &action, nil)
        return source
    }
}
