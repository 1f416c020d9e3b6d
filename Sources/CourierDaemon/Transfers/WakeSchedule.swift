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
        /// Each waiting task's time.
        var wakes: [Int: Date] = [:]
        /// The same times, earliest first (a binary heap); an entry whose task now waits for another time is stale
        /// and dropped when it comes up.
        var queue = WakeQueue()
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
            state.queue.push(date, identifier)
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
            while let (date, identifier) = state.queue.first {
                guard state.wakes[identifier] == date else {
                    state.queue.removeFirst()
                    continue
                }
                guard date <= now else {
                    next = date
                    break
                }
                state.queue.removeFirst()
                state.wakes[identifier] = nil
                due.append(identifier)
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

/// A binary min-heap of wake times and their tasks.
struct WakeQueue {
    private var entries: [(date: Date, identifier: Int)] = []

    var first: (Date, Int)? {
        entries.first.map { ($0.date, $0.identifier) }
    }

    mutating func push(_ date: Date, _ identifier: Int) {
        entries.append((date, identifier))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].date < entries[parent].date else {
                break
            }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !entries.isEmpty else {
            return
        }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].date < entries[smallest].date {
                smallest = left
            }
            if right < entries.count, entries[right].date < entries[smallest].date {
                smallest = right
            }
            guard smallest != parent else {
                return
            }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
