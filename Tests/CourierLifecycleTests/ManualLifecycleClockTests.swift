import CourierConcurrency
import CourierLifecycle
import Testing

@Suite("ManualLifecycleClock")
struct ManualLifecycleClockTests {
    @Test("fires due timers in deadline order, not before, and not when cancelled")
    func ordering() {
        let clock = ManualLifecycleClock()
        let fired = LockedValue<[String]>([])
        _ = clock.schedule(at: .seconds(3)) { fired.withLock { $0.append("c") } }
        _ = clock.schedule(at: .seconds(1)) { fired.withLock { $0.append("a") } }
        let cancelled = clock.schedule(at: .seconds(2)) { fired.withLock { $0.append("x") } }
        _ = clock.schedule(at: .seconds(2)) { fired.withLock { $0.append("b") } }
        cancelled.cancel()
        #expect(clock.pendingTimerCount == 3)

        clock.advance(by: .milliseconds(999))
        #expect(fired.withLock { $0 }.isEmpty)
        clock.advance(by: .seconds(5))
        #expect(fired.withLock { $0 } == ["a", "b", "c"])
        #expect(clock.now == .milliseconds(5_999))
        #expect(clock.pendingTimerCount == 0)
    }

    @Test("a timer scheduled by a firing timer within the advanced range fires in the same advance")
    func chained() {
        let clock = ManualLifecycleClock()
        let fired = LockedValue<[Duration]>([])
        _ = clock.schedule(at: .seconds(1)) {
            fired.withLock { $0.append(clock.now) }
            _ = clock.schedule(at: .seconds(2)) { fired.withLock { $0.append(clock.now) } }
        }
        clock.advance(by: .seconds(10))
        #expect(fired.withLock { $0 } == [.seconds(1), .seconds(2)])
        #expect(clock.now == .seconds(10))
    }
}
