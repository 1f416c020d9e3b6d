import CourierConcurrency
import Foundation

/// courierd's cap on transfers running at once, over all sessions of all apps (`courierd --max-transfers`), and the
/// priorities it honours (BITS's foreground/high/normal/low; `task.priority` on iOS): a waiting attempt of a higher
/// priority starts first, and when every slot is taken it preempts the running attempt of the lowest priority below
/// its own, which is cut keeping its partial file and waits to go on with `Range`.
///
/// An attempt asks with ``request(_:)`` before it is resumed and gives its slot back with ``release(_:)`` when it
/// ends (any ending: success, failure, cancel, preemption, discard); releasing an attempt that only waited withdraws
/// it. Thread-safe; the callbacks run outside the lock, each at most once.
package final class TransferSlots: Sendable {
    /// One attempt's claim.
    package struct Claim: Sendable {
        package var attempt: ObjectIdentifier
        /// The task's priority, 0 (low) ... 1 (high).
        package var priority: Float
        /// Runs once the attempt has a slot: resume it.
        package var start: @Sendable () -> Void
        /// Runs (at most once) when a higher-priority attempt needs its slot: cut it, keeping what it has.
        package var preempt: @Sendable () -> Void

        package init(
            attempt: ObjectIdentifier,
            priority: Float,
            start: @escaping @Sendable () -> Void,
            preempt: @escaping @Sendable () -> Void
        ) {
            self.attempt = attempt
            self.priority = priority
            self.start = start
            self.preempt = preempt
        }
    }

    private struct State {
        var running: [Claim] = []
        /// Preempted, not yet released: they still hold their slots, and are not preempted twice.
        var preempted: Set<ObjectIdentifier> = []
        /// Granted by priority, then arrival.
        var waiting = WaitingClaims()
    }

    /// The default cap: what aria2 and nsurlsessiond do at once, several times over.
    package static let defaultLimit = 16

    package let limit: Int
    private let state = LockedValue(State())

    package init(limit: Int = TransferSlots.defaultLimit) {
        self.limit = max(1, limit)
    }

    /// Transfers holding a slot, and attempts waiting for one.
    package var counts: (running: Int, waiting: Int) {
        state.withLock { ($0.running.count, $0.waiting.count) }
    }

    /// Asks for a slot: `claim.start` runs now when one is free; otherwise the claim waits, and the running attempt
    /// of the lowest priority below its own (if any) is preempted.
    package func request(_ claim: Claim) {
        let (start, preempt) = state.withLock { state -> ((@Sendable () -> Void)?, (@Sendable () -> Void)?) in
            if state.running.count < limit {
                state.running.append(claim)
                return (claim.start, nil)
            }
            state.waiting.append(claim)
            let victim = state.running.enumerated()
                .filter { !state.preempted.contains($0.element.attempt) && $0.element.priority < claim.priority }
                .min { $0.element.priority < $1.element.priority }
            guard let victim else {
                return (nil, nil)
            }
            state.preempted.insert(victim.element.attempt)
            return (nil, victim.element.preempt)
        }
        start?()
        preempt?()
    }

    /// The attempt ended (or never needs its slot): its slot goes to the waiting claims of the highest priority.
    package func release(_ attempt: ObjectIdentifier) {
        let starts = state.withLock { state -> [@Sendable () -> Void] in
            state.waiting.withdraw(attempt)
            state.preempted.remove(attempt)
            guard let index = state.running.firstIndex(where: { $0.attempt == attempt }) else {
                return []
            }
            state.running.remove(at: index)
            var starts: [@Sendable () -> Void] = []
            while state.running.count < limit, let claim = state.waiting.takeBest() {
                state.running.append(claim)
                starts.append(claim.start)
            }
            return starts
        }
        for start in starts {
            start()
        }
    }
}
