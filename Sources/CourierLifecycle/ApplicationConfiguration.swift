public import Dispatch
public import Logging
import CourierIPC

extension Application {
    /// How an ``Application`` keeps time, where it calls back, and what suspending and exiting do.
    ///
    /// The defaults are the real ones: a 180 s budget (iOS 7's), expiration handlers 5 s before its
    /// end, a 5 s limit on `applicationDidEnterBackground` and `applicationWillTerminate`, the
    /// system clock, the main queue, the real process, and no logging. Tests replace the clock
    /// (``ManualLifecycleClock``), the callback queue and the process control.
    public struct Configuration: Sendable {
        /// How long the application may keep running background tasks after entering the
        /// background (180 s by default). Counted only while in the background, from each entry into
        /// it; returning to the foreground stops it, and the next entry starts a fresh budget.
        public var backgroundTimeBudget: Duration

        /// How long before the end of the budget the expiration handlers run (5 s by default). Capped
        /// at a quarter of the budget, so that a short budget (say 1 s) warns 0.25 s before its end.
        public var expirationWarning: Duration

        /// How long `applicationDidEnterBackground` and `applicationWillTerminate` may run before the
        /// watchdog terminates the process (5 s by default).
        public var delegateCallTimeLimit: Duration

        /// How long the app has to call a background fetch's completion handler (30 s by default, as iOS gives);
        /// after that the fetch counts as overrun and its background task ends.
        public var backgroundFetchTimeLimit: Duration = .seconds(30)

        /// The clock for the budget, the expiration time and the watchdog.
        public var clock: any LifecycleClock

        /// Where delegate methods and expiration handlers run: the main queue by default, which
        /// ``Application/main(delegate:configuration:)`` services with `dispatchMain()` (and which an
        /// `async` `main` services too). Must be a serial queue.
        public var callbackQueue: DispatchQueue

        /// What suspending, exiting and the watchdog do to the process.
        public var processControl: ProcessControl

        /// Where the lifecycle logs transitions, refused and unknown background tasks, and
        /// watchdog reports. Silent by default.
        public var logger: Logger

        /// The command line courierd runs to launch the app in the background — for a fetch, a push, or the events
        /// of a background session (whose `backgroundLaunchCommand` defaults to this) — with
        /// `COURIER_BACKGROUND_LAUNCH` in its environment. Nil (the default): this executable with no arguments, not
        /// the arguments this process was started with, which may be what started its work (a relaunch with them
        /// would start it again). Set it when the app needs arguments to run (a configuration file, a log) but none
        /// that start work. Read when the app connects to courierd.
        public var launchCommand: [String]?

        public init(
            backgroundTimeBudget: Duration = .seconds(180),
            expirationWarning: Duration = .seconds(5),
            delegateCallTimeLimit: Duration = .seconds(5),
            clock: any LifecycleClock = SystemLifecycleClock(),
            callbackQueue: DispatchQueue = .main,
            processControl: ProcessControl = .system,
            logger: Logger = Logger(label: "courier.lifecycle", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.backgroundTimeBudget = backgroundTimeBudget
            self.expirationWarning = expirationWarning
            self.delegateCallTimeLimit = delegateCallTimeLimit
            self.clock = clock
            self.callbackQueue = callbackQueue
            self.processControl = processControl
            self.logger = logger
        }

        /// ``launchCommand``, or this executable alone.
        package var resolvedLaunchCommand: [String] {
            launchCommand ?? [ThisExecutable.path]
        }
    }
}
