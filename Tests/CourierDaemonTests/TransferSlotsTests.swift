import CourierConcurrency
import CourierDaemon
import Foundation
import Testing

/// ``TransferSlots``: the cap, the order of grants, and which attempt a higher priority preempts.
@Suite("courierd's transfer slots")
struct TransferSlotsTests {
    /// A claim whose start and preemption are recorded in `log`.
    final class Attempt: Sendable {
        let name: String
        let priority: Float
        init(_ name: String, _ priority: Float) {
            self.name = name
            self.priority = priority
        }

        func claim(_ log: LockedValue<[String]>) -> TransferSlots.Claim {
            TransferSlots.Claim(
                attempt: ObjectIdentifier(self),
                priority: priority,
                start: { [name] in log.withLock { $0.append("start \(name)") } },
                preempt: { [name] in log.withLock { $0.append("preempt \(name)") } }
            )
        }
    }

    @Test("the cap holds; the highest priority waiting goes first; the lowest running below it is preempted once")
    func grantsAndPreemption() {
        let log = LockedValue<[String]>([])
        let slots = TransferSlots(limit: 2)
        let low = Attempt("low", 0.1)
        let normal = Attempt("normal", 0.5)
        let high = Attempt("high", 0.9)
        let higher = Attempt("higher", 1)
        let later = Attempt("later", 0.5)
        slots.request(low.claim(log))
        slots.request(normal.claim(log))
        #expect(slots.counts == (2, 0))
        // Full: a normal one waits and preempts no one of its own priority or above … only the lower one.
        slots.request(later.claim(log))
        #expect(log.withLock { $0 } == ["start low", "start normal", "preempt low"])
        // A higher one finds the low one preempted already: it preempts the normal one, not the low one twice.
        slots.request(high.claim(log))
        #expect(log.withLock { $0.last } == "preempt normal")
        slots.request(higher.claim(log))
        #expect(slots.counts == (2, 3))
        // The low one ends (cut): the highest waiting gets its slot, then the next by priority.
        slots.release(ObjectIdentifier(low))
        #expect(log.withLock { $0.last } == "start higher")
        slots.release(ObjectIdentifier(normal))
        #expect(log.withLock { $0.last } == "start high")
        // A waiting claim withdrawn never starts; releasing what holds nothing changes nothing.
        slots.release(ObjectIdentifier(later))
        slots.release(ObjectIdentifier(Attempt("stranger", 1)))
        #expect(slots.counts == (2, 0))
        slots.release(ObjectIdentifier(high))
        #expect(slots.counts == (1, 0))
        #expect(!log.withLock { $0 }.contains("start later"))
        withExtendedLifetime([low, normal, high, higher, later]) {}
    }

    @Test("10,000 waiting: granted in arrival order within a priority; a withdrawn claim, even one asked again, once")
    func manyWaiting() {
        let log = LockedValue<[String]>([])
        let slots = TransferSlots(limit: 1)
        let first = Attempt("first", 0.5)
        slots.request(first.claim(log))
        let waiting = (0..<10_000).map { Attempt("\($0)", 0.5) }
        for attempt in waiting {
            slots.request(attempt.claim(log))
        }
        // Withdrawn, then asking again: it goes to the back, and starts once.
        slots.release(ObjectIdentifier(waiting[1]))
        slots.request(waiting[1].claim(log))
        slots.release(ObjectIdentifier(waiting[2]))
        #expect(slots.counts == (1, 9_999))
        let byStart = Dictionary(uniqueKeysWithValues: waiting.map { ("start \($0.name)", $0) })
        var running = first
        for _ in 0..<9_999 {
            slots.release(ObjectIdentifier(running))
            running = log.withLock { $0.last }.flatMap { byStart[$0] } ?? running
        }
        let starts = log.withLock { $0 }.dropFirst()
        let expected = ([0] + Array(3..<10_000) + [1]).map { "start \($0)" }
        #expect(Array(starts) == expected)
        #expect(slots.counts == (1, 0))
    }
}
