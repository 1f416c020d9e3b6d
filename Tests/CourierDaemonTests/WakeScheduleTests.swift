import CourierConcurrency
import Foundation
import Testing

@testable import CourierDaemon

/// One timer for a session's waiting tasks: each task is woken once, at (or just after) its earliest time, the due
/// ones together.
@Suite("wake schedule")
struct WakeScheduleTests {
    @Test("tasks wake at their times, the earliest of two kept, the due ones together, each once")
    func wakes() throws {
        let schedule = WakeSchedule(label: "test.wakes")
        let woken = WaitableValue<[(Date, [Int])]>([])
        schedule.onWake { identifiers in
            woken.withLock { $0.append((Date(), identifiers)) }
        }
        let start = Date()
        schedule.add(3, at: start.addingTimeInterval(0.30))
        schedule.add(1, at: start.addingTimeInterval(0.10))
        schedule.add(2, at: start.addingTimeInterval(0.10))
        // Later than the time it waits for already: kept at 0.1 s.
        schedule.add(1, at: start.addingTimeInterval(5))
        // Earlier: moved up.
        schedule.add(4, at: start.addingTimeInterval(5))
        schedule.add(4, at: start.addingTimeInterval(0.20))
        #expect(schedule.count == 4)
        #expect(woken.wait(atMost: 5) { $0.flatMap(\.1).count == 4 })
        let batches = woken.withLock { $0 }
        #expect(batches.map(\.1) == [[1, 2], [4], [3]])
        for ((date, _), after) in zip(batches, [0.10, 0.20, 0.30]) {
            #expect(date.timeIntervalSince(start) >= after - 0.001)
        }
        #expect(schedule.count == 0)
        // Nothing else fires.
        #expect(!woken.wait(atMost: 0.3) { $0.count > 3 })
    }
}
