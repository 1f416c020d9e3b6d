import CourierConcurrency
import CourierLifecycle
import Dispatch
import CourierTestSupport
import Testing

/// Background tasks begun and ended from many threads at once.
@Suite("Concurrency", .blockingWaits)
struct ConcurrencyTests {
    @Test("begin and end from many threads: unique identifiers, nothing lost, one suspension")
    func beginEndManyThreads() {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.launch()
        let keeper = app.beginBackgroundTask(withName: "keeper")
        harness.enterBackground()

        let ids = LockedValue<Set<BackgroundTaskIdentifier>>([])
        DispatchQueue.concurrentPerform(iterations: 2_000) { index in
            let id = app.beginBackgroundTask(withName: "task-\(index)") {}
            _ = app.backgroundTimeRemaining
            _ = app.applicationState
            if index % 3 == 0 {
                app.endBackgroundTask(id)
                app.endBackgroundTask(id)  // a second end is harmless
            } else {
                app.endBackgroundTask(id)
            }
            ids.withLock { _ = $0.insert(id) }
        }
        harness.drain()
        #expect(ids.withLock { $0.count } == 2_000)
        #expect(!ids.withLock { $0.contains(.invalid) })
        #expect(app.openBackgroundTasks.map(\.identifier) == [keeper])
        #expect(harness.control.suspendCount == 0)

        app.endBackgroundTask(keeper)
        harness.drain()
        #expect(harness.control.suspendCount == 1)
    }

    @Test("tasks kept open by many threads, then ended by many threads: exactly one suspension")
    func endAllConcurrently() {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.launch()
        harness.enterBackground()  // idle: suspended once
        harness.enterForeground()

        let ids = LockedValue<[BackgroundTaskIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 500) { index in
            let id = app.beginBackgroundTask(withName: "open-\(index)")
            ids.withLock { $0.append(id) }
        }
        harness.enterBackground()
        #expect(app.openBackgroundTasks.count == 500)
        let all = ids.withLock { $0 }
        DispatchQueue.concurrentPerform(iterations: all.count) { index in
            app.endBackgroundTask(all[index])
        }
        harness.drain()
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(harness.control.suspendCount == 2)
    }

    @Test("expiration racing with ends: every handler runs at most once")
    func expirationRacingEnds() throws {
        let harness = LifecycleHarness(budget: .seconds(20))
        let app = harness.application
        harness.launch()
        let counts = LockedValue<[Int: Int]>([:])
        let ids = (0..<300).map { index in
            app.beginBackgroundTask(withName: "race-\(index)") {
                counts.withLock { $0[index, default: 0] += 1 }
            }
        }
        harness.enterBackground()
        let ready = DispatchGroup()
        ready.enter()
        // A thread of its own: Dispatch's global pool (on Linux also Swift concurrency's) may stay busy past this
        // test's wait under a parallel `swift test`.
        try TestThread.start(name: "expire") {
            harness.clock.advance(by: .seconds(15))  // the expiration time
            ready.leave()
        }
        DispatchQueue.concurrentPerform(iterations: ids.count) { index in
            app.endBackgroundTask(ids[index])
        }
        #expect(ready.wait(timeout: .now() + 10) == .success)
        harness.drain()
        #expect(counts.withLock { $0.values.allSatisfy { $0 == 1 } })
        #expect(counts.withLock { $0.count } <= 300)
        harness.advance(by: .seconds(100))
        #expect(harness.control.reports.isEmpty)
    }
}
