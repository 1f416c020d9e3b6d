/// Every lifecycle decision, made under the application's lock.
///
/// Pure: it reads no clock (callers pass `now`), schedules nothing, and calls no delegate or
/// handler. Each event returns what the ``Application`` must do next, which the application does
/// after releasing the lock (lock → decide → unlock → act).
///
/// Transitions (launch, background, foreground, termination, suspension) are only ever decided on
/// the callback queue, one at a time; background tasks are begun and ended from any thread; timers
/// fire on the clock's queue. Everything a timer or a delegate call carries (a background period
/// number, a delegate-call token) lets a late event find out that it has become stale.
struct LifecycleStateMachine: Sendable {
    enum Phase: Sendable, Hashable {
        case notLaunched
        /// `applicationDidFinishLaunching` is running.
        case launching(intoBackground: Bool)
        case active
        /// `applicationWillResignActive` is running.
        case resigningActive
        /// In the background with the budget running, or `applicationDidEnterBackground` running.
        case background
        /// In the background, idle: ``ProcessControl/suspend`` has been (or is being) called.
        case suspended
        /// `applicationWillEnterForeground` is running.
        case enteringForeground
        /// Termination was decided: `applicationWillTerminate` is about to run or running.
        case terminating
        /// Terminated, cleanly or by the watchdog. Final.
        case terminated
    }

    /// The delegate methods that run under the watchdog.
    enum TimedDelegateMethod: Sendable, Hashable {
        case didEnterBackground
        case willTerminate

        var name: String {
            switch self {
            case .didEnterBackground: "applicationDidEnterBackground(_:)"
            case .willTerminate: "applicationWillTerminate(_:)"
            }
        }
    }

    /// One call of a timed delegate method.
    struct DelegateCall: Sendable, Hashable {
        var token: Int
        var method: TimedDelegateMethod
        /// When the watchdog fires if the call has not returned.
        var deadline: Duration
    }

    /// One background period: what the application schedules on the clock when it begins.
    struct BackgroundPeriod: Sendable, Hashable {
        var number: UInt64
        /// When the expiration handlers are due.
        var expirationTime: Duration
        /// When the budget ends.
        var deadline: Duration
    }

    struct Timing: Sendable, Hashable {
        var budget: Duration
        /// How long before the end of the budget the expiration handlers run.
        var expirationLead: Duration
        var delegateCallTimeLimit: Duration

        /// `expirationLead` is `expirationWarning`, but never more than a quarter of the budget,
        /// so short budgets still leave handlers most of their time.
        init(budget: Duration, expirationWarning: Duration, delegateCallTimeLimit: Duration) {
            self.budget = max(budget, .zero)
            self.expirationLead = max(.zero, min(expirationWarning, self.budget / 4))
            self.delegateCallTimeLimit = max(delegateCallTimeLimit, .zero)
        }
    }

    private struct TaskRecord: Sendable {
        var name: String?
        var began: Duration
        /// Taken out (set to nil) when handed out, so that it runs at most once.
        var expirationHandler: ExpirationHandler?
    }

    // MARK: Actions

    enum BeginAction: Sendable {
        /// Begun. `deliverExpirationNow` is the task's expiration handler when the expiration time
        /// of the current background period has already passed: run it on the callback queue now.
        case begun(BackgroundTaskIdentifier, deliverExpirationNow: ExpirationHandler?)
        /// Not begun; return `.invalid`.
        case refused(reason: String)
    }

    enum EndAction: Sendable, Hashable {
        /// Ended. If `checkIdle`, the last task of a background period ended: schedule an idle
        /// check on the callback queue.
        case ended(checkIdle: Bool)
        case invalidIdentifier
        case unknownIdentifier
    }

    enum IdleAction: Sendable, Hashable {
        case none
        /// Call ``ProcessControl/suspend``.
        case suspend
        /// Run `applicationWillTerminate`, then finish the termination.
        case finishTermination
    }

    enum LaunchAction: Sendable, Hashable {
        /// Launched or terminated already: ignore.
        case alreadyLaunched
        /// Schedule the background period's timers (if launched into the background), then call
        /// `applicationDidFinishLaunching`.
        case launch(backgroundPeriod: BackgroundPeriod?)
    }

    enum LaunchFollowUp: Sendable, Hashable {
        case none
        case becomeActive
        /// Launched into the background: call `applicationDidEnterBackground` under the watchdog.
        case enterBackground(DelegateCall)
    }

    struct BackgroundEntry: Sendable, Hashable {
        var period: BackgroundPeriod
        var call: DelegateCall
    }

    enum TerminationAction: Sendable {
        case none
        /// Active: enter the background first (termination finishes when the tasks have ended).
        case enterBackground
        case finishTermination
        /// Already terminated: resume these waiters, and exit the process if `exitProcess`.
        case alreadyTerminated(waiters: [CheckedContinuation<Void, Never>], exitProcess: Bool)
    }

    struct FinishedTermination: Sendable {
        var exitProcess: Bool
        var waiters: [CheckedContinuation<Void, Never>]
    }

    struct WatchdogAction: Sendable {
        var report: WatchdogReport
        var waiters: [CheckedContinuation<Void, Never>]
    }

    // MARK: State

    let timing: Timing
    private(set) var phase: Phase = .notLaunched
    /// Termination was asked for (terminate(), SIGTERM, shutdown()). Irreversible.
    private(set) var terminationRequested = false
    private var exitProcessOnTermination = false
    private var terminatedByWatchdog = false
    /// ``ProcessControl/exit`` was called (or is being called) for the termination.
    private var exitedProcess = false
    private var terminationWaiters: [CheckedContinuation<Void, Never>] = []
    /// When the current background period began; nil outside the background.
    private var budgetStart: Duration?
    private var periodNumber: UInt64 = 0
    /// The expiration time of the current background period has passed.
    private var expirationDue = false
    private var delegateCall: DelegateCall?
    private var nextDelegateCallToken = 0
    private var tasks: [BackgroundTaskIdentifier: TaskRecord] = [:]
    private var nextTaskNumber = 1

    init(timing: Timing) {
        self.timing = timing
    }

    // MARK: Queries

    var applicationState: ApplicationState {
        switch self.phase {
        case .notLaunched, .resigningActive, .enteringForeground:
            .inactive
        case .launching(let intoBackground):
            intoBackground ? .background : .inactive
        case .active:
            .active
        case .background, .suspended, .terminating, .terminated:
            .background
        }
    }

    var isSuspended: Bool {
        self.phase == .suspended
    }

    /// Suspended with nothing to do: a process running in this state (continued for work that was handed over
    /// already) should stop again.
    var isIdleWhileSuspended: Bool {
        self.phase == .suspended && self.tasks.isEmpty && !self.terminationRequested
    }

    var isTerminated: Bool {
        self.phase == .terminated
    }

    /// What is left of the budget, or nil while not in the background (unlimited).
    func backgroundTimeRemaining(now: Duration) -> Duration? {
        guard let budgetStart = self.budgetStart else { return nil }
        return max(.zero, budgetStart + self.timing.budget - now)
    }

    func openTasks(now: Duration) -> [OpenBackgroundTask] {
        self.tasks.sorted { $0.key < $1.key }.map { id, record in
            OpenBackgroundTask(identifier: id, name: record.name, age: now - record.began)
        }
    }

    // MARK: Background tasks (any thread)

    mutating func beginTask(name: String?, expirationHandler: ExpirationHandler?, now: Duration) -> BeginAction {
        switch self.phase {
        case .terminating, .terminated:
            return .refused(reason: "the application is terminating")
        default:
            break
        }
        if let remaining = self.backgroundTimeRemaining(now: now), remaining <= .zero {
            return .refused(reason: "no background time is left")
        }
        let id = BackgroundTaskIdentifier(rawValue: self.nextTaskNumber)
        self.nextTaskNumber += 1
        let deliverNow = self.expirationDue ? expirationHandler : nil
        self.tasks[id] = TaskRecord(
            name: name,
            began: now,
            expirationHandler: self.expirationDue ? nil : expirationHandler
        )
        return .begun(id, deliverExpirationNow: deliverNow)
    }

    mutating func endTask(_ id: BackgroundTaskIdentifier) -> EndAction {
        guard id != .invalid else { return .invalidIdentifier }
        guard self.tasks.removeValue(forKey: id) != nil else { return .unknownIdentifier }
        let inBackground = self.phase == .background || self.phase == .suspended
        return .ended(checkIdle: self.tasks.isEmpty && inBackground)
    }

    // MARK: Transitions (callback queue)

    /// Starts launching: call `applicationDidFinishLaunching`, then ``finishLaunching(now:)``.
    mutating func launch(intoBackground: Bool, now: Duration) -> LaunchAction {
        guard self.phase == .notLaunched else { return .alreadyLaunched }
        self.phase = .launching(intoBackground: intoBackground)
        return .launch(backgroundPeriod: intoBackground ? self.startBackgroundPeriod(now: now) : nil)
    }

    /// `applicationDidFinishLaunching` returned.
    mutating func finishLaunching(now: Duration) -> LaunchFollowUp {
        guard case .launching(let intoBackground) = self.phase else { return .none }
        if intoBackground {
            self.phase = .background
            return .enterBackground(self.startDelegateCall(.didEnterBackground, now: now))
        }
        self.phase = .active
        return .becomeActive
    }

    /// Asked to enter the background. Returns whether to call `applicationWillResignActive`
    /// (then ``enterBackground(now:)``); false if not active.
    mutating func requestBackground() -> Bool {
        guard self.phase == .active else { return false }
        self.phase = .resigningActive
        return true
    }

    /// `applicationWillResignActive` returned: the background period begins.
    mutating func enterBackground(now: Duration) -> BackgroundEntry? {
        guard self.phase == .resigningActive else { return nil }
        self.phase = .background
        let period = self.startBackgroundPeriod(now: now)
        return BackgroundEntry(period: period, call: self.startDelegateCall(.didEnterBackground, now: now))
    }

    /// Asked to return to the foreground. Returns whether to call `applicationWillEnterForeground`
    /// (then ``becomeActive()``); false if not in the background or terminating.
    mutating func requestForeground() -> Bool {
        guard !self.terminationRequested else { return false }
        guard self.phase == .background || self.phase == .suspended else { return false }
        self.phase = .enteringForeground
        self.budgetStart = nil
        self.expirationDue = false
        self.periodNumber += 1  // makes the period's timers stale
        return true
    }

    /// courierd resumed a suspended application for background work: it stays in the background, with a new
    /// background period. Nil (nothing to do) unless suspended and not terminating.
    mutating func wakeForBackgroundWork(now: Duration) -> BackgroundPeriod? {
        guard self.phase == .suspended, !self.terminationRequested else { return nil }
        self.phase = .background
        return self.startBackgroundPeriod(now: now)
    }

    /// `applicationWillEnterForeground` returned. Returns whether to call `applicationDidBecomeActive`.
    mutating func becomeActive() -> Bool {
        guard self.phase == .enteringForeground else { return false }
        self.phase = .active
        return true
    }

    /// A timed delegate method returned.
    mutating func delegateCallReturned(_ call: DelegateCall) -> IdleAction {
        guard self.delegateCall?.token == call.token else { return .none }  // the watchdog fired
        self.delegateCall = nil
        return call.method == .didEnterBackground ? self.idleCheck() : .none
    }

    /// Whether the application is idle in the background: suspend it, or finish terminating it.
    mutating func idleCheck() -> IdleAction {
        guard self.tasks.isEmpty, self.delegateCall == nil else { return .none }
        switch self.phase {
        case .background:
            if self.terminationRequested {
                self.phase = .terminating
                return .finishTermination
            }
            self.phase = .suspended
            return .suspend
        case .suspended where self.terminationRequested:
            self.phase = .terminating
            return .finishTermination
        default:
            return .none
        }
    }

    mutating func requestTermination(
        exitProcess: Bool,
        waiter: CheckedContinuation<Void, Never>?
    ) -> TerminationAction {
        if self.phase == .terminated {
            defer { self.exitedProcess = self.exitedProcess || exitProcess }
            return .alreadyTerminated(
                waiters: waiter.map { [$0] } ?? [],
                exitProcess: exitProcess && !self.terminatedByWatchdog && !self.exitedProcess
            )
        }
        if let waiter {
            self.terminationWaiters.append(waiter)
        }
        self.exitProcessOnTermination = self.exitProcessOnTermination || exitProcess
        guard !self.terminationRequested else { return .none }
        self.terminationRequested = true
        switch self.phase {
        case .notLaunched:
            self.phase = .terminating
            return .finishTermination
        case .active:
            return .enterBackground
        case .background, .suspended:
            return self.idleCheck() == .finishTermination ? .finishTermination : .none
        case .launching, .resigningActive, .enteringForeground, .terminating, .terminated:
            // Transient phases exist only inside one callback-queue block, so a request, which
            // runs in a block of its own, never sees them.
            return .none
        }
    }

    /// Returns the `applicationWillTerminate` call to make, or nil if not terminating.
    mutating func beginWillTerminate(now: Duration) -> DelegateCall? {
        guard self.phase == .terminating else { return nil }
        return self.startDelegateCall(.willTerminate, now: now)
    }

    /// `applicationWillTerminate` returned (or there is no delegate): terminated.
    mutating func finishTermination() -> FinishedTermination? {
        guard self.phase == .terminating else { return nil }
        self.phase = .terminated
        self.delegateCall = nil
        self.exitedProcess = self.exitProcessOnTermination
        defer { self.terminationWaiters = [] }
        return FinishedTermination(exitProcess: self.exitProcessOnTermination, waiters: self.terminationWaiters)
    }

    // MARK: Timers (clock queue)

    /// The expiration time of a background period: returns the handlers to run, oldest task first.
    mutating func expirationTimeReached(period: UInt64) -> [ExpirationHandler] {
        guard period == self.periodNumber, self.budgetStart != nil, self.phase != .terminated else { return [] }
        self.expirationDue = true
        var handlers: [ExpirationHandler] = []
        for id in self.tasks.keys.sorted() {
            if let handler = self.tasks[id]?.expirationHandler {
                handlers.append(handler)
                self.tasks[id]?.expirationHandler = nil
            }
        }
        return handlers
    }

    /// The end of a background period's budget: the watchdog, if tasks are still open.
    mutating func deadlineReached(period: UInt64, now: Duration) -> WatchdogAction? {
        guard period == self.periodNumber, self.budgetStart != nil, self.phase != .terminated else { return nil }
        guard !self.tasks.isEmpty else { return nil }
        return self.watchdog(.backgroundTimeExpired(budget: self.timing.budget), now: now)
    }

    /// The time limit of a delegate call: the watchdog, if that call has not returned.
    mutating func delegateCallDeadlineReached(token: Int, now: Duration) -> WatchdogAction? {
        guard let call = self.delegateCall, call.token == token, self.phase != .terminated else { return nil }
        return self.watchdog(
            .delegateTimeout(method: call.method.name, limit: self.timing.delegateCallTimeLimit),
            now: now
        )
    }

    // MARK: Helpers

    private mutating func startBackgroundPeriod(now: Duration) -> BackgroundPeriod {
        self.budgetStart = now
        self.expirationDue = false
        self.periodNumber += 1
        let deadline = now + self.timing.budget
        return BackgroundPeriod(
            number: self.periodNumber,
            expirationTime: deadline - self.timing.expirationLead,
            deadline: deadline
        )
    }

    private mutating func startDelegateCall(_ method: TimedDelegateMethod, now: Duration) -> DelegateCall {
        self.nextDelegateCallToken += 1
        let call = DelegateCall(
            token: self.nextDelegateCallToken,
            method: method,
            deadline: now + self.timing.delegateCallTimeLimit
        )
        self.delegateCall = call
        return call
    }

    private mutating func watchdog(_ reason: WatchdogReport.Reason, now: Duration) -> WatchdogAction {
        let report = WatchdogReport(reason: reason, openTasks: self.openTasks(now: now))
        self.phase = .terminated
        self.terminatedByWatchdog = true
        self.delegateCall = nil
        defer { self.terminationWaiters = [] }
        return WatchdogAction(report: report, waiters: self.terminationWaiters)
    }
}
