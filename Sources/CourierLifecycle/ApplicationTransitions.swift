import Dispatch
import CourierIPC
import Logging

/// The transitions: launch, background, foreground, suspension, termination and the watchdog.
///
/// Each public method queues its transition on the callback queue; the `run…` methods run there,
/// one at a time. Each asks the state machine under the lock, then calls the delegate and the
/// process control with no lock held.
extension Application {
    /// Launches the application: sets its delegate, calls `applicationDidFinishLaunching`, then
    /// `applicationDidBecomeActive` — or, when `options` says it was launched into the background,
    /// starts the budget and calls `applicationDidEnterBackground`.
    ///
    /// Returns at once; the calls happen on the callback queue. Only the first launch counts; later
    /// ones are logged and ignored. ``main(delegate:configuration:)`` calls this for you.
    public func launch(delegate: sending (any ApplicationDelegate)? = nil, options: LaunchOptions = .foreground) {
        var box: DelegateBox?
        if let delegate {
            box = DelegateBox(delegate)
        }
        self.launch(box, options: options)
    }

    func launch(_ box: DelegateBox?, options: LaunchOptions) {
        self.callbackQueue.async { self.runLaunch(box, options: options) }
    }

    /// Moves an active application to the background, as SIGTSTP does: `applicationWillResignActive`,
    /// then the budget starts and `applicationDidEnterBackground` runs; once it has returned and no
    /// background task remains, the application is suspended. Does nothing unless active.
    /// Returns at once.
    public func enterBackground() {
        self.callbackQueue.async { self.runEnterBackground() }
    }

    /// Brings a background or suspended application back, as SIGCONT does:
    /// `applicationWillEnterForeground`, then `applicationDidBecomeActive`. The budget stops; open
    /// background tasks stay open. Does nothing unless in the background, or once terminating.
    /// Returns at once.
    public func enterForeground() {
        self.callbackQueue.async { self.runEnterForeground() }
    }

    /// Terminates the application, as SIGTERM does: an active application enters the background
    /// (`applicationWillResignActive`, `applicationDidEnterBackground`) so that its work can finish
    /// in background tasks within the budget; once none remains, `applicationWillTerminate` runs and
    /// the process exits with status 0 (through ``ProcessControl/exit``). Tasks still open when the
    /// budget ends get the process terminated by the watchdog (status 96). Irreversible; returns at once.
    public func terminate() {
        self.callbackQueue.async { self.runTermination(exitProcess: true, waiter: nil) }
    }

    /// Terminates the application like ``terminate()``, but does not exit the process: returns once
    /// every background task has ended and `applicationWillTerminate` has returned (or once the
    /// watchdog has fired, with a ``ProcessControl`` whose `terminate` returns). For programs that
    /// shut down in their own way, such as ``ApplicationLifecycleService``.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.callbackQueue.async { self.runTermination(exitProcess: false, waiter: continuation) }
        }
    }

    // MARK: Running transitions (callback queue)

    private func runLaunch(_ box: DelegateBox?, options: LaunchOptions) {
        let now = self.clock.now
        let action = self.machine.withLock { $0.launch(intoBackground: options.launchedIntoBackground, now: now) }
        guard case .launch(let period) = action else {
            self.logger.error("Application.launch called more than once (or after termination); ignored")
            return
        }
        self.delegateBox.withLock { $0 = box }
        self.launchOptionsStorage.withLock { $0 = options }
        self.publishPresence()
        self.logger.info(
            "launched",
            metadata: ["launch.background": "\(options.backgroundLaunchReason.map { $0.rawValue } ?? "no")"]
        )
        if let period {
            self.scheduleBackgroundTimers(period)
        }
        self.callDelegate { $0.applicationDidFinishLaunching(self, options: options) }
        // A relaunch for background session events holds a background task until the delegate says they are
        // handled: begun before the application enters the background, so that it is not suspended at once.
        var eventsTask: BackgroundTaskIdentifier?
        if let identifier = options.backgroundLaunchReason?.urlSessionIdentifier {
            eventsTask = self.beginBackgroundTask(withName: "events of background session \(identifier)")
        }
        // A launch for a background fetch or a push holds one too, until the handler is called or its time is up.
        var launchWork: (BackgroundWork, BackgroundTaskIdentifier)?
        if options.backgroundLaunchReason == .backgroundFetch {
            launchWork = (BackgroundWork(kind: .fetch, wake: nil), self.beginBackgroundTask(withName: "background fetch"))
        } else if options.backgroundLaunchReason == .remoteNotification {
            let task = self.beginBackgroundTask(withName: "remote notification")
            launchWork = (BackgroundWork(kind: .remoteNotification, wake: nil), task)
        }
        let followUp = self.machine.withLock { $0.finishLaunching(now: self.clock.now) }
        switch followUp {
        case .none:
            break
        case .becomeActive:
            self.callDelegate { $0.applicationDidBecomeActive(self) }
        case .enterBackground(let call):
            self.runDidEnterBackground(call)
        }
        if let identifier = options.backgroundLaunchReason?.urlSessionIdentifier, let eventsTask {
            self.callDelegate { delegate in
                delegate.application(self, handleEventsForBackgroundURLSession: identifier) { [self] in
                    self.completedBackgroundWork()
                    self.endBackgroundTask(eventsTask)
                }
            }
        }
        if let (work, task) = launchWork {
            self.runBackgroundWork(work, payload: options.remoteNotification, holding: task)
        }
    }

    func runEnterBackground() {
        guard self.machine.withLock({ $0.requestBackground() }) else { return }
        self.logger.info("entering the background")
        self.callDelegate { $0.applicationWillResignActive(self) }
        let now = self.clock.now
        guard let entry = self.machine.withLock({ $0.enterBackground(now: now) }) else { return }
        self.publishPresence()
        self.scheduleBackgroundTimers(entry.period)
        self.runDidEnterBackground(entry.call)
    }

    private func runDidEnterBackground(_ call: LifecycleStateMachine.DelegateCall) {
        let watchdog = self.armWatchdog(for: call)
        self.callDelegate { $0.applicationDidEnterBackground(self) }
        watchdog.cancel()
        let idle = self.machine.withLock { $0.delegateCallReturned(call) }
        self.perform(idle)
    }

    private func runEnterForeground() {
        guard self.machine.withLock({ $0.requestForeground() }) else { return }
        self.cancelBackgroundTimers()
        self.publishPresence()
        self.logger.info("entering the foreground")
        self.callDelegate { $0.applicationWillEnterForeground(self) }
        guard self.machine.withLock({ $0.becomeActive() }) else { return }
        self.callDelegate { $0.applicationDidBecomeActive(self) }
    }

    /// Tells ``ApplicationPresence`` where the shared application stands (other instances are not the process's).
    private func publishPresence() {
        guard Application.isShared(self) else { return }
        ApplicationPresence.publish(inForeground: self.applicationState != .background)
    }

    func runIdleCheck() {
        self.perform(self.machine.withLock { $0.idleCheck() })
    }

    private func perform(_ action: LifecycleStateMachine.IdleAction) {
        switch action {
        case .none:
            break
        case .suspend:
            self.logger.info("suspending: in the background with no background task left")
            self.suspendProcess()
        case .finishTermination:
            self.runWillTerminate()
        }
    }

    private func runTermination(exitProcess: Bool, waiter: CheckedContinuation<Void, Never>?) {
        let action = self.machine.withLock { $0.requestTermination(exitProcess: exitProcess, waiter: waiter) }
        switch action {
        case .none:
            break
        case .enterBackground:
            self.logger.info("terminating: entering the background first")
            self.runEnterBackground()
        case .finishTermination:
            self.runWillTerminate()
        case .alreadyTerminated(let waiters, let exitNow):
            for waiter in waiters {
                waiter.resume()
            }
            if exitNow {
                self.configuration.processControl.exit(.normal)
            }
        }
    }

    private func runWillTerminate() {
        let now = self.clock.now
        guard let call = self.machine.withLock({ $0.beginWillTerminate(now: now) }) else { return }
        let watchdog = self.armWatchdog(for: call)
        self.callDelegate { $0.applicationWillTerminate(self) }
        watchdog.cancel()
        _ = self.machine.withLock { $0.delegateCallReturned(call) }
        guard let finished = self.machine.withLock({ $0.finishTermination() }) else { return }
        self.cancelBackgroundTimers()
        self.logger.info("terminated")
        for waiter in finished.waiters {
            waiter.resume()
        }
        if finished.exitProcess {
            self.configuration.processControl.exit(.normal)
        }
    }

    /// Calls the delegate, if there is one and the application has not been terminated by the
    /// watchdog. On the callback queue only.
    func callDelegate(_ body: (any ApplicationDelegate) -> Void) {
        dispatchPrecondition(condition: .onQueue(self.callbackQueue))
        guard !self.machine.withLock({ $0.isTerminated }), let box = self.delegateBox.withLock({ $0 }) else {
            return
        }
        body(box.delegate)
    }

    // MARK: Timers (clock queue)

    func scheduleBackgroundTimers(_ period: LifecycleStateMachine.BackgroundPeriod) {
        let number = period.number
        let expiration = self.clock.schedule(at: period.expirationTime) { [weak self] in
            self?.expirationTimeReached(period: number)
        }
        let deadline = self.clock.schedule(at: period.deadline) { [weak self] in
            self?.deadlineReached(period: number)
        }
        self.backgroundTimers.withLock { $0.append(contentsOf: [expiration, deadline]) }
    }

    private func cancelBackgroundTimers() {
        let timers = self.backgroundTimers.withLock { timers in
            defer { timers = [] }
            return timers
        }
        for timer in timers {
            timer.cancel()
        }
    }

    private func expirationTimeReached(period: UInt64) {
        let handlers = self.machine.withLock { $0.expirationTimeReached(period: period) }
        if !handlers.isEmpty {
            self.logger.notice("background time nearly over: running \(handlers.count) expiration handler(s)")
        }
        self.deliverExpiration(handlers)
    }

    /// Runs expiration handlers on the callback queue, each once, unless the watchdog has fired by then.
    func deliverExpiration(_ handlers: [ExpirationHandler]) {
        guard !handlers.isEmpty else { return }
        self.callbackQueue.async {
            for handler in handlers where !self.machine.withLock({ $0.isTerminated }) {
                handler()
            }
        }
    }

    private func deadlineReached(period: UInt64) {
        let now = self.clock.now
        if let action = self.machine.withLock({ $0.deadlineReached(period: period, now: now) }) {
            self.runWatchdog(action)
        }
    }

    private func armWatchdog(for call: LifecycleStateMachine.DelegateCall) -> any LifecycleClockTimer {
        let token = call.token
        return self.clock.schedule(at: call.deadline) { [weak self] in
            guard let self else { return }
            let now = self.clock.now
            if let action = self.machine.withLock({ $0.delegateCallDeadlineReached(token: token, now: now) }) {
                self.runWatchdog(action)
            }
        }
    }

    private func runWatchdog(_ action: LifecycleStateMachine.WatchdogAction) {
        self.logger.critical("\(action.report)")
        self.configuration.processControl.terminate(action.report)
        for waiter in action.waiters {
            waiter.resume()
        }
    }
}
