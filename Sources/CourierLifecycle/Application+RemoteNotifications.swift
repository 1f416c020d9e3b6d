import Dispatch
package import Foundation

/// Remote notifications (DESIGN.md §6, background-behaviours.md #15) and the background work courierd hands the
/// application: the registration, the device token, and the fetch and push handlers run when courierd wakes or
/// launches the application.
extension Application {
    /// Registers the application with courierd for remote notifications, as iOS's does with APNs: the device token
    /// (stable for this app and user, kept across courierd's restarts) comes to
    /// ``ApplicationDelegate/application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`` on the callback
    /// queue, once per call — or the reason to
    /// ``ApplicationDelegate/application(_:didFailToRegisterForRemoteNotificationsWithError:)``. Call it at every
    /// launch. Starts courierd when none runs. Callable from any thread; returns at once.
    public func registerForRemoteNotifications() {
        self.fetchState.withLock { $0.remoteNotifications = true }
        self.registrationChanged(connecting: true, deliveringToken: true)
    }

    /// Whether ``registerForRemoteNotifications()`` was called (whatever its outcome).
    public var isRegisteredForRemoteNotifications: Bool {
        self.fetchState.withLock { $0.remoteNotifications }
    }

    /// Tells courierd the fetch interval and the push registration, off the callback queue (connecting may take a
    /// moment). Connects only when `connecting`; otherwise only a link already made hears of it.
    func registrationChanged(connecting: Bool, deliveringToken: Bool = false) {
        guard Application.isShared(self) else { return }
        DispatchQueue.global().async {
            let link = connecting ? BackgroundServiceLinks.link(for: self) : BackgroundServiceLinks.existing
            let (interval, remote) = self.fetchState.withLock { ($0.interval, $0.remoteNotifications) }
            guard let link else {
                if deliveringToken {
                    self.didRegisterForRemoteNotifications(.failure(BackgroundServiceUnavailable()))
                }
                return
            }
            link.registrationChanged(fetchInterval: interval, remoteNotifications: remote, deliveringToken: deliveringToken)
        }
    }

    /// courierd answered a registration for remote notifications: the delegate hears of it on the callback queue.
    package func didRegisterForRemoteNotifications(_ result: Result<Data, any Error>) {
        self.callbackQueue.async {
            self.callDelegate { delegate in
                switch result {
                case .success(let token):
                    delegate.application(self, didRegisterForRemoteNotificationsWithDeviceToken: token)
                case .failure(let error):
                    delegate.application(self, didFailToRegisterForRemoteNotificationsWithError: error)
                }
            }
        }
    }

    /// courierd asks for background work (a fetch, a silent push's handler), after resuming the process if it was
    /// suspended: the application stays in (or returns to) the background with a new background period, and the
    /// delegate's handler runs under a background task within ``Configuration/backgroundFetchTimeLimit``; its report
    /// goes back to courierd. Returns at once.
    package func performBackgroundWork(_ work: BackgroundWork, payload: Data?) {
        self.wakesWaiting.withLock { $0 += 1 }
        self.callbackQueue.async {
            self.wakesWaiting.withLock { $0 -= 1 }
            let now = self.clock.now
            if let period = self.machine.withLock({ $0.wakeForBackgroundWork(now: now) }) {
                self.logger.info("woken in the background", metadata: ["work": "\(work.kind.rawValue)"])
                self.scheduleBackgroundTimers(period)
            }
            let task = self.beginBackgroundTask(withName: work.kind == .fetch ? "background fetch" : "remote notification")
            self.runBackgroundWork(work, payload: payload, holding: task)
        }
    }

    /// Runs the handler of `work` on the callback queue and reports it to courierd.
    func runBackgroundWork(_ work: BackgroundWork, payload: Data?, holding task: BackgroundTaskIdentifier) {
        // Reported before the handler returns (an app may exit right after); work the process was launched for is
        // reported over a link made for the purpose if the app made none.
        let report: @Sendable (BackgroundFetchReport) -> Void = { report in
            guard Application.isShared(self) else { return }
            BackgroundServiceLinks.link(for: self)?.finished(work, report: report)
        }
        switch work.kind {
        case .fetch:
            self.runFetch(holding: task, completion: report)
        case .remoteNotification:
            self.runRemoteNotification(payload ?? Data("{}".utf8), holding: task, completion: report)
        }
    }

    /// Calls the delegate's push handler with the payload as a dictionary, under the same time limit as a fetch.
    func runRemoteNotification(
        _ payload: Data,
        holding task: BackgroundTaskIdentifier,
        completion: (@Sendable (BackgroundFetchReport) -> Void)?
    ) {
        self.runTimedWork(named: "remote notification", holding: task, recordsLastFetch: false, completion: completion) {
            handler in
            let userInfo = ((try? JSONSerialization.jsonObject(with: payload)) as? [String: Any]) ?? [:]
            var asked = false
            self.callDelegate { delegate in
                asked = true
                delegate.application(self, didReceiveRemoteNotification: userInfo, fetchCompletionHandler: handler)
            }
            return asked
        }
    }

    /// Suspends the process (``ProcessControl/suspend``), and when it is continued, tells courierd's continue from the
    /// user's at once: courierd writes a wake before it resumes a stopped process, so something received on the link
    /// since the stop means courierd (the application stays in the background: the wake's work follows); nothing
    /// means the user (it comes to the foreground). Without a link to courierd, SIGCONT's handler decides alone.
    func suspendProcess() {
        guard Application.isShared(self), let link = BackgroundServiceLinks.existing else {
            self.configuration.processControl.suspend()
            return
        }
        // A wake that arrived while the application was becoming idle waits on the callback queue: no stop, it starts.
        guard self.wakesWaiting.withLock({ $0 }) == 0 else {
            self.logger.info("not suspending: background work from courierd is waiting")
            return
        }
        let mark = link.receiveMark()
        self.configuration.processControl.suspend()
        let resumption = self.resumptions.withLock { count in
            count += 1
            return count
        }
        // The link's reader, continued at the same moment, may be between taking the wake off the socket and counting
        // it: a few looks, 5 ms apart, before concluding it was the user.
        var byDaemon = false
        for look in 0..<10 where !byDaemon {
            if look > 0 {
                usleep(5_000)
            }
            byDaemon = link.hasReceived(since: mark) || self.wakesWaiting.withLock({ $0 }) > 0
        }
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
        if let daemon = BackgroundServiceLinks.existing?.daemonProcess, sender == daemon {
            return
        }
        self.enterForeground()
    }
}
