/// The source of time for the lifecycle: the background time budget, expiration warnings and the
/// watchdog all read and schedule through it, so tests can run a 180 s budget in milliseconds with
/// a ``ManualLifecycleClock``.
///
/// Time is a monotonic `Duration` since an origin of the clock's choosing.
public protocol LifecycleClock: Sendable {
    /// The current time, monotonic, since the clock's origin. Callable from any thread.
    var now: Duration { get }

    /// Calls `action` once, at or after `deadline`, unless the returned timer is cancelled first.
    ///
    /// `action` must run on a thread or queue of the clock's own, never on the caller's thread from
    /// inside this call and never on the application's callback queue: the watchdog relies on
    /// timers firing while the callback queue is blocked.
    func schedule(at deadline: Duration, _ action: @escaping @Sendable () -> Void) -> any LifecycleClockTimer
}

/// A timer scheduled on a ``LifecycleClock``.
public protocol LifecycleClockTimer: Sendable {
    /// Cancels the timer: its action will not run if it has not started yet. Idempotent; callable
    /// from any thread.
    func cancel()
}
