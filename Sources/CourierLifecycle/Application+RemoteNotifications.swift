import Dispatch
package import Foundation

/// Remote notifications (docs/lifecycle.md, docs/background-model.md #15) and the background work courierd hands the
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

    /// Where registration changes are sent from, in order.
    private static let registrationQueue = DispatchQueue(label: "courier.lifecycle.registration")

    /// Tells courierd the fetch interval and the push registration, off the callback queue (connecting may take a
    /// moment), one change after the other: two changes sent from a concurrent queue could reach courierd in the
    /// other order, and the older state win (an app registered for pushes journaled as not registered, its pushes
    /// then refused as `Unregistered`). Connects only when `connecting`; otherwise only a link already made hears of
    /// it.
    func registrationChanged(connecting: Bool, deliveringToken: Bool = false) {
        guard Application.isShared(self) else { return }
        Application.registrationQueue.async {
            let link = connecting ? BackgroundServiceLink.link(for: self) : BackgroundServiceLink.existing
            let (interval, remote) = self.fetchState.withLock { ($0.interval, $0.remoteNotifications) }
            guard let link else {
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
            BackgroundServiceLink.link(for: self).finished(work, report: report)
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
            delegate, handler in
            let userInfo = Application.userInfo(ofPush: payload)
            delegate.application(self, didReceiveRemoteNotification: userInfo, fetchCompletionHandler: handler)
        }
    }
}

extension Application {
    /// A push's JSON payload as the dictionary the delegate gets (empty when it is not a JSON object).
    static func userInfo(ofPush payload: Data) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: payload)) as? [String: Any]) ?? [:]
    }
}
