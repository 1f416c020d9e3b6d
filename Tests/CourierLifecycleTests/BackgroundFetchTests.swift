import CourierConcurrency
import CourierLifecycle
import Testing

/// Background fetch in the application: the launch for one, the handler's time limit, the interval the app asks
/// for, and the snapshot handler; on the virtual clock.
@Suite("background fetch")
struct BackgroundFetchTests {
    typealias Call = RecordingDelegate.Call

    /// An application launched for a fetch whose delegate keeps the handler (not calling it), counting snapshots.
    static func launchedForFetch() -> (
        LifecycleHarness, kept: LockedValue<(@Sendable (BackgroundFetchResult) -> Void)?>, snapshots: LockedValue<Int>
    ) {
        let harness = LifecycleHarness()
        let kept = LockedValue<(@Sendable (BackgroundFetchResult) -> Void)?>(nil)
        harness.delegate.onPerformFetch { _, handler in kept.withLock { $0 = handler } }
        let snapshots = LockedValue(0)
        harness.application.setSnapshotHandler { _ in snapshots.withLock { $0 += 1 } }
        harness.launch(LaunchOptions(backgroundLaunchReason: .backgroundFetch))
        return (harness, kept, snapshots)
    }

    @Test("launched for a fetch: performFetch in the background; the handler ends its task and the app is suspended")
    func launchedForFetch() {
        let (harness, kept, snapshots) = Self.launchedForFetch()
        // The kept handler holds the application, which holds the delegate, which holds `kept`: let go at the end.
        defer { kept.withLock { $0 = nil } }
        #expect(harness.application.launchOptions?.backgroundLaunchReason == .backgroundFetch)
        #expect(harness.delegate.calls.last == Call(name: "performFetch", state: .background))
        // The fetch holds a background task: not suspended while it runs.
        #expect(harness.application.openBackgroundTasks.map(\.name) == ["background fetch"])
        #expect(harness.control.suspendCount == 0)

        harness.advance(by: .seconds(3))
        kept.withLock { $0 }?(.newData)
        harness.drain()
        #expect(harness.application.lastBackgroundFetch == BackgroundFetchReport(result: .newData, overran: false, duration: .seconds(3)))
        #expect(snapshots.withLock { $0 } == 1)
        #expect(harness.application.openBackgroundTasks.isEmpty)
        #expect(harness.control.suspendCount == 1)
        // A second call is ignored.
        kept.withLock { $0 }?(.failed)
        #expect(harness.application.lastBackgroundFetch?.result == .newData)
        #expect(snapshots.withLock { $0 } == 1)
    }

    @Test("a handler not called within 30 s: the fetch is overrun, its task ends, a late answer is ignored")
    func overrun() {
        let (harness, kept, snapshots) = Self.launchedForFetch()
        defer { kept.withLock { $0 = nil } }
        harness.advance(by: .seconds(29))
        #expect(harness.application.lastBackgroundFetch == nil)
        harness.advance(by: .seconds(1))
        #expect(harness.application.lastBackgroundFetch == BackgroundFetchReport(result: nil, overran: true, duration: .seconds(30)))
        #expect(harness.application.openBackgroundTasks.isEmpty)
        #expect(harness.control.suspendCount == 1)
        kept.withLock { $0 }?(.newData)
        #expect(harness.application.lastBackgroundFetch?.overran == true)
        #expect(snapshots.withLock { $0 } == 0)
    }

    @Test("a fetch asked of a running app (courierd, or a simulation) reports once; the app stays active")
    func simulated() async {
        let harness = LifecycleHarness()
        harness.launch()
        let report = await withCheckedContinuation { continuation in
            harness.application.performBackgroundFetch { continuation.resume(returning: $0) }
        }
        #expect(report.result == .noData)
        #expect(!report.overran)
        #expect(harness.delegate.calls.last == Call(name: "performFetch", state: .active))
        harness.drain()
        #expect(harness.application.applicationState == .active)
        #expect(harness.application.openBackgroundTasks.isEmpty)
    }

    @Test("the snapshot handler runs when a background session's events handler is called, too")
    func snapshotAfterSessionEvents() {
        let harness = LifecycleHarness()
        let snapshots = LockedValue(0)
        harness.application.setSnapshotHandler { _ in snapshots.withLock { $0 += 1 } }
        // The delegate's default implementation calls the handler at once.
        harness.launch(LaunchOptions(backgroundLaunchReason: .backgroundURLSession("com.example.podcasts")))
        #expect(snapshots.withLock { $0 } == 1)
        #expect(harness.control.suspendCount == 1)
    }

    @Test("the interval: never by default, then what the app sets")
    func interval() {
        let application = LifecycleHarness().application
        #expect(application.minimumBackgroundFetchInterval == .never)
        #expect(application.minimumBackgroundFetchInterval.seconds == nil)
        application.setMinimumBackgroundFetchInterval(.minimum)
        #expect(application.minimumBackgroundFetchInterval.seconds == 0)
        application.setMinimumBackgroundFetchInterval(.seconds(3600))
        #expect(application.minimumBackgroundFetchInterval == .seconds(3600))
        #expect(BackgroundFetchInterval.seconds(-5) == .minimum)
    }
}
