import CourierConcurrency
import Dispatch
import Logging

/// The application: its lifecycle state, its delegate, and its background tasks, like
/// `UIApplication` on iOS.
///
/// There is one per process, ``shared``, created by ``main(delegate:configuration:)`` (or on first
/// use). Tests and embedding programs may create their own with ``init(configuration:)`` to inject
/// a clock, a callback queue and a ``ProcessControl``; such an application is driven through the
/// API and gets signal handling only from ``installSignalHandlers(_:)``.
///
/// **Threading.** Every method and property is callable from any thread. Delegate methods and
/// expiration handlers run on ``Configuration/callbackQueue`` (the main queue by default). The
/// transition methods (``launch(delegate:options:)``, ``enterBackground()``, ``enterForeground()``,
/// ``terminate()``) only queue the transition there and return; transitions run one at a time, in
/// the order they were asked for.
///
/// **Background tasks.** ``beginBackgroundTask(withName:expirationHandler:)`` asks for time to finish
/// work even if the application leaves the foreground; every begin needs a matching
/// ``endBackgroundTask(_:)``. In the background, the budget (180 s by default) runs; shortly before it
/// ends, each open task's expiration handler runs once, on the callback queue; if tasks are still
/// open when it ends, the watchdog terminates the process with a report naming them (exit status
/// 96). When no task remains and `applicationDidEnterBackground` has returned, the application is
/// suspended (with the default ``ProcessControl``, the process stops itself with SIGSTOP).
public final class Application: Sendable {
    /// The configuration the application was created with.
    public let configuration: Configuration

    let machine: LockedValue<LifecycleStateMachine>
    let delegateBox = LockedValue<DelegateBox?>(nil)
    /// The clock timers of the current background period, cancelled on return to the foreground.
    let backgroundTimers = LockedValue<[any LifecycleClockTimer]>([])
    /// Background fetch state: the interval asked for, the last fetch, the snapshot handler
    /// (`Application+BackgroundFetch.swift`).
    let fetchState = LockedValue(FetchState())
    let launchOptionsStorage = LockedValue<LaunchOptions?>(nil)
    /// Wakes from courierd handed to the callback queue and not started yet.
    let wakesWaiting = LockedValue(0)
    /// How many times the suspended process has been continued (``suspendProcess()``).
    let resumptions = LockedValue<UInt64>(0)

    /// Creates an application. Use ``shared`` in a program; create others only in tests or to embed
    /// a lifecycle with an injected clock, callback queue and process control.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.machine = LockedValue(
            LifecycleStateMachine(
                timing: .init(
                    budget: configuration.backgroundTimeBudget,
                    expirationWarning: configuration.expirationWarning,
                    delegateCallTimeLimit: configuration.delegateCallTimeLimit
                )
            )
        )
    }

    var clock: any LifecycleClock { self.configuration.clock }
    var callbackQueue: DispatchQueue { self.configuration.callbackQueue }
    var logger: Logger { self.configuration.logger }

    // MARK: State

    /// Why the application was launched (a background launch's reason, as `COURIER_BACKGROUND_LAUNCH` said): nil
    /// before ``launch(delegate:options:)``. Callable from any thread.
    public var launchOptions: LaunchOptions? {
        self.launchOptionsStorage.withLock { $0 }
    }

    /// The current state. Callable from any thread.
    public var applicationState: ApplicationState {
        self.machine.withLock { $0.applicationState }
    }

    /// Whether the application is suspended: in the background, idle, and (with the default
    /// ``ProcessControl``) stopped. Callable from any thread.
    public var isSuspended: Bool {
        self.machine.withLock { $0.isSuspended }
    }

    /// The background time left, in seconds: `Double.greatestFiniteMagnitude` while not in the
    /// background (active, inactive), counting down from the budget while in the background, and 0
    /// once it has run out. Callable from any thread.
    public var backgroundTimeRemaining: Double {
        let now = self.clock.now
        guard let remaining = self.machine.withLock({ $0.backgroundTimeRemaining(now: now) }) else {
            return .greatestFiniteMagnitude
        }
        return remaining.inSeconds
    }

    /// The background tasks begun and not yet ended, oldest first. Callable from any thread.
    public var openBackgroundTasks: [OpenBackgroundTask] {
        let now = self.clock.now
        return self.machine.withLock { $0.openTasks(now: now) }
    }

    // MARK: Background tasks

    /// Begins a background task: work that must not be interrupted by suspension.
    ///
    /// Callable from any thread, in any state: a task begun in the foreground ("background-safe")
    /// keeps the application running when it leaves the foreground, within the budget.
    ///
    /// - Parameters:
    ///   - name: Shown in logs and in the watchdog's report.
    ///   - expirationHandler: Runs once, on the callback queue, shortly before the background budget
    ///     ends (``Configuration/expirationWarning`` before), if the task is still open then; or as
    ///     soon as possible if the task is begun after that point. It should end the task. It runs
    ///     at most once, and never after the task has ended before the expiration time. It need not
    ///     be `Sendable`, but whatever it captures must be safe to use on the callback queue. Begun
    ///     from another thread after the expiration time, it may run before this method returns.
    /// - Returns: The task's identifier, for ``endBackgroundTask(_:)``; ``BackgroundTaskIdentifier/invalid``
    ///   when no background time is left (the budget ran out) or the application is terminating.
    public func beginBackgroundTask(
        withName name: String? = nil,
        expirationHandler: (() -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        var handler: ExpirationHandler?
        if let expirationHandler {
            handler = ExpirationHandler(expirationHandler)
        }
        let now = self.clock.now
        let action = self.machine.withLock { $0.beginTask(name: name, expirationHandler: handler, now: now) }
        switch action {
        case .begun(let id, let deliverNow):
            self.logger.debug("began background task", metadata: taskMetadata(id, name))
            if let deliverNow {
                self.deliverExpiration([deliverNow])
            }
            return id
        case .refused(let reason):
            self.logger.notice(
                "refused background task: \(reason)",
                metadata: name.map { ["task.name": .string($0)] }
            )
            return .invalid
        }
    }

    /// Ends a background task. Callable from any thread, any number of times: ending
    /// ``BackgroundTaskIdentifier/invalid``, an unknown task or one already ended does nothing but log.
    ///
    /// When the last task ends in the background, the application is suspended (or, if it is
    /// terminating, calls `applicationWillTerminate` and exits).
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        let action = self.machine.withLock { $0.endTask(identifier) }
        switch action {
        case .ended(let checkIdle):
            self.logger.debug("ended background task", metadata: ["task.id": "\(identifier)"])
            if checkIdle {
                self.callbackQueue.async { self.runIdleCheck() }
            }
        case .invalidIdentifier:
            self.logger.notice("endBackgroundTask(.invalid) ignored")
        case .unknownIdentifier:
            self.logger.warning(
                "endBackgroundTask: unknown or already ended background task ignored",
                metadata: ["task.id": "\(identifier)"]
            )
        }
    }
}

private func taskMetadata(_ id: BackgroundTaskIdentifier, _ name: String?) -> Logger.Metadata {
    var metadata: Logger.Metadata = ["task.id": "\(id)"]
    if let name {
        metadata["task.name"] = .string(name)
    }
    return metadata
}
