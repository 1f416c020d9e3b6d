import CourierLifecycle
import Testing

/// The background time budget: counted only in the background, from each entry into it.
@Suite("Background time budget")
struct BackgroundBudgetTests {
    @Test("is unlimited while active and counts down only in the background")
    func countedOnlyInBackground() {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.launch()
        #expect(app.applicationState == .active)
        #expect(app.backgroundTimeRemaining == .greatestFiniteMagnitude)

        // Time in the foreground costs nothing, even with a task open.
        let task = app.beginBackgroundTask(withName: "upload")
        #expect(task != .invalid)
        harness.advance(by: .seconds(1000))
        #expect(app.backgroundTimeRemaining == .greatestFiniteMagnitude)

        harness.enterBackground()
        #expect(app.applicationState == .background)
        #expect(app.backgroundTimeRemaining == 180)
        harness.advance(by: .seconds(100))
        #expect(app.backgroundTimeRemaining == 80)

        // Back in the foreground the budget stops, and its timers with it.
        harness.enterForeground()
        #expect(app.applicationState == .active)
        #expect(app.backgroundTimeRemaining == .greatestFiniteMagnitude)
        harness.advance(by: .seconds(500))
        #expect(harness.control.reports.isEmpty)
        #expect(app.openBackgroundTasks.map(\.identifier) == [task])

        // The next entry starts a fresh budget.
        harness.enterBackground()
        #expect(app.backgroundTimeRemaining == 180)
        harness.advance(by: .milliseconds(179_999))
        #expect(harness.control.reports.isEmpty)
        harness.advance(by: .milliseconds(1))
        #expect(harness.control.reports.count == 1)
    }

    @Test("the default budget is 180 seconds and is configurable")
    func defaultAndConfigurableBudget() {
        #expect(Application.Configuration().backgroundTimeBudget == .seconds(180))
        let harness = LifecycleHarness(budget: .seconds(30))
        harness.launch()
        harness.enterBackground()
        #expect(harness.application.backgroundTimeRemaining == 30)
    }

    @Test("returns .invalid once no background time is left")
    func invalidAfterExpiry() {
        let harness = LifecycleHarness(budget: .seconds(10))
        let app = harness.application
        harness.launch()
        harness.enterBackground()
        #expect(app.isSuspended)  // idle: suspended (the recording control does not really stop)

        harness.advance(by: .seconds(9))
        let late = app.beginBackgroundTask(withName: "late")
        #expect(late != .invalid)
        app.endBackgroundTask(late)
        harness.drain()

        harness.advance(by: .seconds(1))
        #expect(app.backgroundTimeRemaining == 0)
        #expect(app.beginBackgroundTask(withName: "too late") == .invalid)
        #expect(app.beginBackgroundTask() == .invalid)
        app.endBackgroundTask(.invalid)  // harmless
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(harness.control.reports.isEmpty)

        // The foreground gives time back.
        harness.enterForeground()
        #expect(app.beginBackgroundTask(withName: "again") != .invalid)
    }

    @Test("returns .invalid after the watchdog has terminated the application")
    func invalidAfterWatchdog() {
        let harness = LifecycleHarness(budget: .seconds(10))
        let app = harness.application
        harness.launch()
        _ = app.beginBackgroundTask(withName: "stuck")
        harness.enterBackground()
        harness.advance(by: .seconds(10))
        #expect(harness.control.reports.count == 1)
        #expect(app.beginBackgroundTask(withName: "after") == .invalid)
    }

    @Test("an application launched into the background starts with its budget running")
    func launchedIntoBackground() {
        let harness = LifecycleHarness()
        harness.launch(LaunchOptions(backgroundLaunchReason: .backgroundFetch))
        #expect(harness.application.applicationState == .background)
        #expect(harness.application.backgroundTimeRemaining == 180)
        harness.advance(by: .seconds(30))
        #expect(harness.application.backgroundTimeRemaining == 150)
    }
}
