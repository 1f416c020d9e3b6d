import CourierConcurrency
import Foundation

/// A thread-safe, awaitable list of events: tests append from delegate queues and wait for conditions with a
/// bounded timeout instead of sleeping.
final class EventLog<Event: Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        var predicate: @Sendable ([Event]) -> Bool
        var continuation: CheckedContinuation<[Event], any Error>
    }

    private struct State {
        var events: [Event] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = LockedValue(State())

    init() {}

    func append(_ event: Event) {
        let ready = state.withLock { state -> [(CheckedContinuation<[Event], any Error>, [Event])] in
            state.events.append(event)
            var ready: [(CheckedContinuation<[Event], any Error>, [Event])] = []
            state.waiters.removeAll { waiter in
                if waiter.predicate(state.events) {
                    ready.append((waiter.continuation, state.events))
                    return true
                }
                return false
            }
            return ready
        }
        for (continuation, events) in ready {
            continuation.resume(returning: events)
        }
    }

    var events: [Event] {
        state.withLock { $0.events }
    }

    /// Waits until `predicate` holds for the events so far; throws `TimedOut` after `timeout`.
    @discardableResult
    func wait(
        timeout: Duration = .seconds(20),
        _ what: String = "condition",
        until predicate: @escaping @Sendable ([Event]) -> Bool
    ) async throws -> [Event] {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(id, what: what)
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> [Event]? in
                if predicate(state.events) {
                    return state.events
                }
                state.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
            }
        }
    }

    private func expire(_ id: Int, what: String) {
        let waiter = state.withLock { state -> (Waiter, [Event])? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                return nil
            }
            return (state.waiters.remove(at: index), state.events)
        }
        if let (waiter, events) = waiter {
            waiter.continuation.resume(throwing: TimedOut(what: what, events: events.map { "\($0)" }))
        }
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var events: [String]

    var description: String {
        "timed out waiting for \(what); events so far: \(events.suffix(30))"
    }
}

/// Runs `operation`, failing with `TimedOut` when it takes longer than `timeout`.
func withTimeout<T: Sendable>(
    _ timeout: Duration = .seconds(30),
    _ what: String = "operation",
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask {
            try await operation()
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimedOut(what: what, events: [])
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
