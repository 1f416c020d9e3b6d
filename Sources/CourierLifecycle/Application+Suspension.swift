import CourierIPC
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Stopping the suspended process and continuing it: courierd continues it for background work (it stays in the
/// background), anyone else brings it to the foreground.
extension Application {
    /// Suspends the process (``ProcessControl/suspend``), and when it is continued, tells courierd's continue from the
    /// user's at once: courierd writes before it resumes a stopped process (a wake for a fetch or a push, a background
    /// session's events), so something received on any connection to courierd since the stop means courierd (the
    /// application stays in the background: the work or the delegate calls follow); nothing means the user (it comes
    /// to the foreground). Without a connection to courierd, SIGCONT's handler decides alone.
    func suspendProcess() {
        guard Application.isShared(self), DaemonConnections.any else {
            self.configuration.processControl.suspend()
            return
        }
        // A wake that arrived while the application was becoming idle waits on the callback queue: no stop, it starts.
        guard self.wakesWaiting.withLock({ $0 }) == 0 else {
            self.logger.info("not suspending: background work from courierd is waiting")
            return
        }
        let mark = DaemonConnections.receiveMark()
        // courierd hears it before the stop (each connection writes it on this thread): it continues the process for
        // what it writes from now on, and counts an idle instance's time from here. What it wrote before that, and
        // this process has received, is looked at here: no stop, as if courierd had continued the process at once.
        ApplicationPresence.publish(suspended: true)
        if !DaemonConnections.hasReceived(since: mark), self.wakesWaiting.withLock({ $0 }) == 0 {
            self.configuration.processControl.suspend()
        }
        ApplicationPresence.publish(suspended: false)
        let resumption = self.resumptions.withLock { count in
            count += 1
            return count
        }
        // A connection's reader, continued at the same moment, may be between taking the bytes off the socket and
        // counting them: it is given 45 ms before concluding it was the user.
        let byDaemon =
            self.wakesWaiting.withLock({ $0 }) > 0
            || DaemonConnections.waitForReceived(since: mark, atMost: 0.045)
            || self.wakesWaiting.withLock({ $0 }) > 0
        guard byDaemon else {
            self.enterForeground()
            return
        }
        self.logger.info("continued by courierd for background work; staying in the background")
        // When the wake was read before the stop (courierd resumed the process once more, as it stopped between reading
        // a wake and starting it) and is done, nothing starts, and the process stops again.
        self.callbackQueue.asyncAfter(deadline: .now() + 0.2) {
            // Only for this resumption: after a later one (the user's), the process is not stopped by this check.
            guard self.resumptions.withLock({ $0 }) == resumption, self.machine.withLock({ $0.isIdleWhileSuspended })
            else { return }
            self.logger.info("continued by courierd with no work left: suspending again")
            self.suspendProcess()
        }
    }

    /// SIGCONT from `sender` (its handler may run late, and the kernel keeps one sender of two merged signals): any
    /// process but courierd brings the application to the foreground; courierd's continue is handled where the
    /// process resumes (``suspendProcess()``).
    func continued(by sender: pid_t) {
        if let daemon = DaemonConnections.daemonProcess, sender == daemon {
            return
        }
        self.enterForeground()
    }
}
