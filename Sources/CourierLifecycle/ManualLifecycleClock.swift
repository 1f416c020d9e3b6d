import CourierConcurrency

/// A virtual clock for tests: time stands still until ``advance(by:)`` moves it.
///
/// Timers whose deadline is reached fire on the thread that calls `advance`, in deadline order
/// (then in the order they were scheduled), outside the clock's lock, so an action may schedule or
/// cancel timers and read ``now``. A timer scheduled while `advance` runs, with a deadline within
/// the range being advanced over, fires in the same call. A timer scheduled with a deadline already
/// past does not fire from `schedule`; it fires on the next `advance` (`advance(by: .zero)` will do).
///
/// With it, a test checks a 180 s background budget in microseconds:
/// ```swift
/// let clock = ManualLifecycleClock()
/// // … create an Application with `configuration.clock = clock`, enter the background …
/// clock.advance(by: .seconds(175))   // the expiration handlers are now queued
/// ```
public final class ManualLifecycleClock: LifecycleClock {
    private struct Timer {
        var id: Int
        var deadline: Duration
        var action: @Sendable () -> Void
    }

    private struct State {
        var now: Duration
        var timers: [Timer] = []
        var nextID = 0
    }

    private let state: LockedValue<State>

    /// Creates a clock whose time starts at `now`.
    public init(now: Duration = .zero) {
        self.state = LockedValue(State(now: now))
    }

    public var now: Duration {
        self.state.withLock { $0.now }
    }

    /// How many timers are scheduled and neither fired nor cancelled.
    public var pendingTimerCount: Int {
        self.state.withLock { $0.timers.count }
    }

    public func schedule(at deadline: Duration, _ action: @escaping @Sendable () -> Void) -> any LifecycleClockTimer {
        let id = self.state.withLock { state in
            state.nextID += 1
            state.timers.append(Timer(id: state.nextID, deadline: deadline, action: action))
            return state.nextID
        }
        return ManualLifecycleClockTimer(clock: self, id: id)
    }

    /// Moves time forward by `duration`, firing every timer that falls due, in order.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualLifecycleClock cannot go back in time")
        let target = self.now + duration
        self.advance(to: target)
    }

    /// Moves time forward to `instant` (no-op if it is not later than ``now``, apart from firing
    /// timers already due).
    public func advance(to instant: Duration) {
        while true {
            let next: Timer? = self.state.withLock { state in
                guard
                    let index = state.timers.indices.min(by: { left, right in
                        let (a, b) = (state.timers[left], state.timers[right])
                        return (a.deadline, a.id) < (b.deadline, b.id)
                    }),
                    state.timers[index].deadline <= max(instant, state.now)
                else {
                    state.now = max(state.now, instant)
                    return nil
                }
                let timer = state.timers.remove(at: index)
                state.now = max(state.now, timer.deadline)
                return timer
            }
            guard let next else { return }
            next.action()
        }
    }

    fileprivate func cancel(id: Int) {
        self.state.withLock { state in
            state.timers.removeAll { $0.id == id }
        }
    }
}

/// A timer of ``ManualLifecycleClock``.
struct ManualLifecycleClockTimer: LifecycleClockTimer {
    let clock: ManualLifecycleClock
    let id: Int

    func cancel() {
        self.clock.cancel(id: self.id)
    }
}
