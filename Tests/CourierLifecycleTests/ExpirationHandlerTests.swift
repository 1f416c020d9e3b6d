import CourierConcurrency
import CourierLifecycle
import Testing

/// Expiration handlers: on the callback queue, shortly before the budget ends, each once.
@Suite("Expiration handlers")
struct ExpirationHandlerTests {
    /// Counts the calls of each named handler and whether each ran on the callback queue.
    final class HandlerLog: Sendable {
        private let calls = LockedValue<[(name: String, onCallbackQueue: Bool)]>([])

        func record(_ name: String, _ harness: LifecycleHarness) {
            let onQueue = harness.isOnCallbackQueue
            self.calls.withLock { $0.append((name, onQueue)) }
        }

        var names: [String] {
            self.calls.withLock { $0.map(\.name) }
        }

        var allOnCallbackQueue: Bool {
            self.calls.withLock { $0.allSatisfy(\.onCallbackQueue) }
        }
    }

    @Test("run on the callback queue 5 s before the end of a 180 s budget, each once")
    func timingAndOnce() {
        let harness = LifecycleHarness()
        let app = harness.application
        let log = HandlerLog()
        harness.launch()
        let first = app.beginBackgroundTask(withName: "first") { log.record("first", harness) }
        let second = app.beginBackgroundTask(withName: "second") { log.record("second", harness) }
        harness.enterBackground()

        harness.advance(by: .milliseconds(174_999))
        #expect(log.names.isEmpty)
        harness.advance(by: .milliseconds(1))
        #expect(log.names == ["first", "second"])
        #expect(log.allOnCallbackQueue)

        harness.advance(by: .seconds(2))
        #expect(log.names == ["first", "second"])  // once only

        app.endBackgroundTask(first)
        app.endBackgroundTask(second)
        harness.advance(by: .seconds(10))
        #expect(log.names == ["first", "second"])
        #expect(harness.control.reports.isEmpty)
        #expect(harness.control.suspendCount == 1)
    }

    @Test("are capped at a quarter of a short budget", arguments: [
        (budget: Duration.seconds(2), due: Duration.milliseconds(1500)),
        (budget: Duration.seconds(20), due: Duration.seconds(15)),
        (budget: Duration.seconds(60), due: Duration.seconds(55)),
    ])
    func proportionalForShortBudgets(budget: Duration, due: Duration) {
        let harness = LifecycleHarness(budget: budget)
        let app = harness.application
        let log = HandlerLog()
        harness.launch()
        _ = app.beginBackgroundTask(withName: "work") { log.record("work", harness) }
        harness.enterBackground()
        harness.advance(by: due - .milliseconds(1))
        #expect(log.names.isEmpty)
        harness.advance(by: .milliseconds(1))
        #expect(log.names == ["work"])
    }

    @Test("the iOS idiom: the handler ends its own task, and the application is suspended")
    func handlerEndsTask() {
        let harness = LifecycleHarness(budget: .seconds(20))
        let app = harness.application
        harness.delegate.onDidEnterBackground { app in
            var id = BackgroundTaskIdentifier.invalid
            id = app.beginBackgroundTask(withName: "flush") { app.endBackgroundTask(id) }
        }
        harness.launch()
        harness.enterBackground()
        #expect(app.openBackgroundTasks.map(\.name) == ["flush"])
        #expect(harness.control.suspendCount == 0)

        harness.advance(by: .seconds(15))
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(harness.control.suspendCount == 1)
        harness.advance(by: .seconds(5))
        #expect(harness.control.reports.isEmpty)
    }

    @Test("a task begun after the expiration time gets its handler at once")
    func begunLate() {
        let harness = LifecycleHarness(budget: .seconds(20))
        let app = harness.application
        let log = HandlerLog()
        harness.launch()
        let keeper = app.beginBackgroundTask(withName: "keeper")
        harness.enterBackground()
        harness.advance(by: .seconds(16))
        _ = app.beginBackgroundTask(withName: "late") { log.record("late", harness) }
        harness.drain()
        #expect(log.names == ["late"])
        #expect(log.allOnCallbackQueue)
        app.endBackgroundTask(keeper)
    }

    @Test("a task ended before the expiration time never gets its handler")
    func endedEarly() {
        let harness = LifecycleHarness()
        let app = harness.application
        let log = HandlerLog()
        harness.launch()
        let task = app.beginBackgroundTask(withName: "quick") { log.record("quick", harness) }
        harness.enterBackground()
        harness.advance(by: .seconds(10))
        app.endBackgroundTask(task)
        harness.advance(by: .seconds(200))
        #expect(log.names.isEmpty)
    }

    @Test("a handler not yet due when the app returns to the foreground waits for the next background period")
    func survivesForeground() {
        let harness = LifecycleHarness()
        let app = harness.application
        let log = HandlerLog()
        harness.launch()
        _ = app.beginBackgroundTask(withName: "long") { log.record("long", harness) }
        harness.enterBackground()
        harness.advance(by: .seconds(100))
        harness.enterForeground()
        harness.advance(by: .seconds(100))
        #expect(log.names.isEmpty)
        harness.enterBackground()
        harness.advance(by: .seconds(175))
        #expect(log.names == ["long"])
    }

    @Test("a handler that has run never runs again, even in a later background period")
    func onceAcrossPeriods() {
        let harness = LifecycleHarness()
        let app = harness.application
        let log = HandlerLog()
        harness.launch()
        let task = app.beginBackgroundTask(withName: "stubborn") { log.record("stubborn", harness) }
        harness.enterBackground()
        harness.advance(by: .seconds(175))
        #expect(log.names == ["stubborn"])
        harness.enterForeground()  // the task is still open
        harness.enterBackground()
        harness.advance(by: .seconds(176))
        #expect(log.names == ["stubborn"])
        app.endBackgroundTask(task)
    }
}
