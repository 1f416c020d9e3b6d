import CourierConcurrency
import Foundation

/// When a session's waiting tasks look at their start again (a retry's time, a begin date, the next look at the
/// machine's conditions), on one timer per session: a runner with 100,000 waiting tasks holds one timer and one date
/// per task, not a timer of its own for each.
///
/// ``add(_:at:)`` keeps a task's earliest wake (waking early is harmless: the task's machine decides again); when the
/// timer fires, every task whose time has come is handed to the wake handler at once, in identifier order, on the
/// schedule's queue.
final class WakeSchedule: Sendable {
    private struct State {
        var wakes: [Int: Date] = [:]
        /// The date the timer is set for; nil when it is not set.
        var armed: Date?
        var handler: (@Sendable ([Int]) -> Void)?
    }

    private let state = LockedValue(State())
    /// `@unchecked Sendable` box: a dispatch source is thread-safe (schedule, cancel and the handler are set through
    /// libdispatch, which serialises them); it is only ever scheduled with `state`'s lock held.
    private struct Timer: @unchecked Sendable {
        let source: any DispatchSourceTimer
    }

    private let timer: Timer

    init(label: String) {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
        timer = Timer(source: source)
        source.setEventHandler { [weak self] in
            self?.fire()
        }
        source.activate()
    }

    deinit {
        timer.source.cancel()
    }

    /// Who is woken: set once, by the schedule's owner after it is made.
    func onWake(_ handler: @escaping @Sendable ([Int]) -> Void) {
        state.withLock { $0.handler = handler }
    }

    /// Task `identifier` looks at its start again at `date` (or at the earlier time it already waits for).
    func add(_ identifier: Int, at date: Date) {
        state.withLock { state in
            if let existing = state.wakes[identifier], existing <= date {
                return
            }
            state.wakes[identifier] = date
            if state.armed.map({ date < $0 }) ?? true {
                arm(&state, at: date)
            }
        }
    }

    /// How many tasks wait for a wake.
    var count: Int {
        state.withLock { $0.wakes.count }
    }

    private func arm(_ state: inout State, at date: Date) {
        state.armed = date
        timer.source.schedule(deadline: .now() + max(0, date.timeIntervalSinceNow), leeway: .milliseconds(5))
    }

    private func fire() {
        let now = Date()
        let (due, handler) = state.withLock { state -> ([Int], (@Sendable ([Int]) -> Void)?) in
            var due: [Int] = []
            var next: Date?
            for (identifier, date) in state.wakes {
                if date <= now {
                    due.append(identifier)
                } else if next.map({ date < $0 }) ?? true {
                    next = date
                }
            }
            for identifier in due {
                state.wakes[identifier] = nil
            }
            if let next {
                arm(&state, at: next)
            } else {
                state.armed = nil
            }
            return (due.sorted(), state.handler)
        }
        if !due.isEmpty {
            handler?(due)
        }
    }
}
