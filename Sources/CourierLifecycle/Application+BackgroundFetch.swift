import CourierConcurrency

/// Background fetch (docs/lifecycle.md, docs/background-model.md #14): the interval the app asks for, the fetch itself
/// with its time limit, and the snapshot handler the completion handlers call.
extension Application {
    struct FetchState: Sendable {
        var interval = BackgroundFetchInterval.never
        var last: BackgroundFetchReport?
        var snapshotHandler: (@Sendable (Application) -> Void)?
        var remoteNotifications = false
    }

    /// How often the app wants to be woken for a background fetch, at least apart; ``BackgroundFetchInterval/never``
    /// (the default) means never. courierd hears of it (it is started if it does not run, unless the interval is
    /// never) and schedules the fetches: it learns when the app is used and fetches shortly before, backs off an app
    /// that finds nothing. Callable from any thread; returns at once.
    public func setMinimumBackgroundFetchInterval(_ interval: BackgroundFetchInterval) {
        self.fetchState.withLock { $0.interval = interval }
        self.logger.info("minimum background fetch interval", metadata: ["interval": "\(interval)"])
        self.registrationChanged(connecting: interval != .never)
    }

    /// The interval last set (``BackgroundFetchInterval/never`` until then).
    public var minimumBackgroundFetchInterval: BackgroundFetchInterval {
        self.fetchState.withLock { $0.interval }
    }

    /// How the last background fetch went; nil before the first has ended.
    public var lastBackgroundFetch: BackgroundFetchReport? {
        self.fetchState.withLock { $0.last }
    }

    /// Registers what to run each time a completion handler of background work is called (a background fetch's,
    /// a background session's events handler): the Linux counterpart of iOS refreshing the app's snapshot, so the
    /// app can write its state for the next launch. Runs on the thread that called the completion handler, once per
    /// call; nil removes it.
    public func setSnapshotHandler(_ handler: (@Sendable (Application) -> Void)?) {
        self.fetchState.withLock { $0.snapshotHandler = handler }
    }

    /// Asks the delegate for a background fetch now, as courierd does when it wakes a running app (or Xcode's
    /// "Simulate Background Fetch"): `application(_:performFetchWithCompletionHandler:)` runs on the callback queue
    /// under a background task that ends when the app calls the handler or the time limit passes. `completion` gets
    /// the report, once. Returns at once.
    public func performBackgroundFetch(completion: (@Sendable (BackgroundFetchReport) -> Void)? = nil) {
        let task = self.beginBackgroundTask(withName: "background fetch")
        self.callbackQueue.async { self.runFetch(holding: task, completion: completion) }
    }

    /// Calls the delegate's fetch under ``runTimedWork(named:holding:recordsLastFetch:completion:call:)``.
    func runFetch(holding task: BackgroundTaskIdentifier, completion: (@Sendable (BackgroundFetchReport) -> Void)?) {
        self.runTimedWork(named: "background fetch", holding: task, recordsLastFetch: true, completion: completion) {
            delegate, handler in
            delegate.application(self, performFetchWithCompletionHandler: handler)
        }
    }

    /// Runs a delegate method that ends with a ``BackgroundFetchResult`` handler (a fetch, a push) within
    /// ``Configuration/backgroundFetchTimeLimit``: the handler (or the time limit, whichever comes first) records the
    /// report (as ``lastBackgroundFetch`` with `recordsLastFetch`), calls the snapshot handler (not after an overrun),
    /// calls `completion` and ends `task`, once. `call` calls the delegate's method with the handler; without a
    /// delegate (or once terminated) the work ends with `.noData`. Runs on the callback queue.
    func runTimedWork(
        named name: String,
        holding task: BackgroundTaskIdentifier,
        recordsLastFetch: Bool,
        completion: (@Sendable (BackgroundFetchReport) -> Void)?,
        call: (any ApplicationDelegate, @escaping @Sendable (BackgroundFetchResult) -> Void) -> Void
    ) {
        let started = self.clock.now
        let once = OnceFlag()
        // Weak, as the other timers: the clock belongs to the application, and a strong capture would keep both alive
        // until the limit passes (LeakSanitizer reported the cycle).
        let limit = self.clock.schedule(at: started + self.configuration.backgroundFetchTimeLimit) { [weak self] in
            guard let self, once.claim() else { return }
            let report = BackgroundFetchReport(result: nil, overran: true, duration: self.clock.now - started)
            if recordsLastFetch {
                self.fetchState.withLock { $0.last = report }
            }
            self.logger.warning(
                "the completion handler of a \(name) was not called in time",
                metadata: ["limit": "\(self.configuration.backgroundFetchTimeLimit)"]
            )
            // Reported before the task ends: ending it may suspend the process (SIGSTOP) before a report is written.
            completion?(report)
            self.endBackgroundTask(task)
        }
        let handler: @Sendable (BackgroundFetchResult) -> Void = { [self] result in
            guard once.claim() else {
                self.logger.notice("the completion handler of a \(name) was called again, or too late")
                return
            }
            limit.cancel()
            let report = BackgroundFetchReport(result: result, overran: false, duration: self.clock.now - started)
            if recordsLastFetch {
                self.fetchState.withLock { $0.last = report }
            }
            self.completedBackgroundWork()
            completion?(report)
            self.endBackgroundTask(task)
        }
        var asked = false
        self.callDelegate { delegate in
            asked = true
            call(delegate, handler)
        }
        if !asked {
            // No delegate (or terminated): nothing was fetched.
            handler(.noData)
        }
    }

    /// A completion handler of background work was called: the snapshot handler runs.
    func completedBackgroundWork() {
        self.fetchState.withLock { $0.snapshotHandler }?(self)
    }
}
