import CourierConcurrency
import CourierLifecycle
import Dispatch
import CourierTestSupport
import Testing

private let flushCount = LockedValue(0)

private func flushQueue() async {
    try? await Task.sleep(for: .milliseconds(10))
    flushCount.withLock { $0 += 1 }
}

/// The delegate from the issue's example (and docs/lifecycle.md), verbatim: it must compile in
/// Swift 6 language mode without diagnostics, and behave as described.
private final class AppDelegate: ApplicationDelegate {
    func applicationDidEnterBackground(_ app: Application) {
        var id = BackgroundTaskIdentifier.invalid
        id = app.beginBackgroundTask(withName: "flush") { app.endBackgroundTask(id) }
        Task.detached { await flushQueue(); app.endBackgroundTask(id) }
    }
}

@Suite("The issue's example", .blockingWaits)
struct IssueExampleTests {
    @Test("flushes in a background task ended from another thread, then the application is suspended")
    func example() {
        let harness = LifecycleHarness()
        let app = harness.application
        app.launch(delegate: AppDelegate())
        harness.drain()
        app.enterBackground()
        // The detached flush runs on Swift concurrency's global executor, which on Linux shares its threads with the
        // other suites' blocking waits (Dispatch's default-QoS pool): in a parallel `swift test` it may wait for one
        // of them to end, seen past 10 s.
        #expect(harness.control.waitForSuspension(timeout: .seconds(60)))
        #expect(harness.control.suspendCount == 1)
        #expect(flushCount.withLock { $0 } >= 1)
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(harness.control.reports.isEmpty)
    }
}
