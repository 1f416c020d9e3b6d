import CourierLifecycle
import Dispatch
import CourierTestSupport
import Testing

/// The watchdog: tasks still open when the budget ends, and delegate methods that overrun.
@Suite("Watchdog", .blockingWaits)
struct WatchdogTests {
    @Test("names every open task (name, identifier, age) when the budget ends")
    func reportContents() throws {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.launch()
        let upload = app.beginBackgroundTask(withName: "upload")  // background-safe, begun in the foreground
        harness.advance(by: .seconds(40))
        harness.enterBackground()
        harness.advance(by: .seconds(10))
        let save = app.beginBackgroundTask(withName: "save")
        let finished = app.beginBackgroundTask(withName: "finished")
        harness.advance(by: .seconds(10))
        let unnamed = app.beginBackgroundTask()
        app.endBackgroundTask(finished)
        harness.advance(by: .milliseconds(159_999))
        #expect(harness.control.reports.isEmpty)
        harness.advance(by: .milliseconds(1))

        let report = try #require(harness.control.reports.first)
        #expect(harness.control.reports.count == 1)
        #expect(report.reason == .backgroundTimeExpired(budget: .seconds(180)))
        #expect(report.exitStatus == .backgroundTimeExpired)
        #expect(report.exitStatus.rawValue == 96)
        #expect(
            report.openTasks == [
                OpenBackgroundTask(identifier: upload, name: "upload", age: .seconds(220)),
                OpenBackgroundTask(identifier: save, name: "save", age: .seconds(170)),
                OpenBackgroundTask(identifier: unnamed, name: nil, age: .seconds(160)),
            ]
        )
        let text = report.description
        #expect(text.contains("budget of 180.000 s ran out with 3 background tasks still open"))
        #expect(text.contains("exit status 96"))
        #expect(text.contains("background task \(upload) \"upload\", open for 220.000 s"))
        #expect(text.contains("background task \(save) \"save\", open for 170.000 s"))
        #expect(text.contains("background task \(unnamed) (unnamed), open for 160.000 s"))
        #expect(!text.contains("finished"))
        #expect(text.split(separator: "\n").count == 4)
    }

    @Test("after firing, the application runs no more delegate methods or handlers")
    func terminatedIsFinal() {
        let harness = LifecycleHarness(budget: .seconds(10))
        let app = harness.application
        harness.launch()
        _ = app.beginBackgroundTask(withName: "stuck")
        harness.enterBackground()
        harness.advance(by: .seconds(10))
        #expect(harness.control.events.count == 1)
        let callsBefore = harness.delegate.names
        harness.enterForeground()
        harness.terminate()
        harness.advance(by: .seconds(1000))
        #expect(harness.delegate.names == callsBefore)
        #expect(harness.control.events.count == 1)
    }

    @Test("does not fire when every task ended in time")
    func quietWhenTasksEnd() {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.launch()
        let task = app.beginBackgroundTask(withName: "work")
        harness.enterBackground()
        harness.advance(by: .seconds(179))
        app.endBackgroundTask(task)
        harness.advance(by: .seconds(1000))
        #expect(harness.control.reports.isEmpty)
        #expect(harness.control.suspendCount == 1)
    }

    @Test("terminates an applicationDidEnterBackground that overruns 5 s, with a report")
    func slowDidEnterBackground() throws {
        let harness = LifecycleHarness()
        let app = harness.application
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        harness.delegate.onDidEnterBackground { app in
            _ = app.beginBackgroundTask(withName: "begun-first")
            entered.signal()
            release.wait()
        }
        harness.launch()
        app.enterBackground()
        #expect(entered.wait(timeout: .now() + 10) == .success)

        harness.clock.advance(by: .milliseconds(4_999))
        #expect(harness.control.reports.isEmpty)
        harness.clock.advance(by: .milliseconds(1))
        let report = try #require(harness.control.reports.first)
        #expect(report.reason == .delegateTimeout(method: "applicationDidEnterBackground(_:)", limit: .seconds(5)))
        #expect(report.exitStatus == .delegateTimeout)
        #expect(report.exitStatus.rawValue == 97)
        #expect(report.openTasks.map(\.name) == ["begun-first"])
        #expect(report.description.contains("applicationDidEnterBackground(_:) did not return within 5.000 s"))
        #expect(report.description.contains("exit status 97"))

        release.signal()
        harness.drain()
        #expect(harness.control.events.count == 1)  // no suspension after the watchdog
    }

    @Test("does not fire for an applicationDidEnterBackground that returns in time")
    func promptDidEnterBackground() {
        let harness = LifecycleHarness()
        harness.launch()
        harness.enterBackground()
        harness.advance(by: .seconds(60))
        #expect(harness.control.reports.isEmpty)
    }

    @Test("terminates an applicationWillTerminate that overruns its limit")
    func slowWillTerminate() throws {
        let harness = LifecycleHarness(delegateCallTimeLimit: .seconds(2))
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        harness.delegate.onWillTerminate { _ in
            entered.signal()
            release.wait()
        }
        harness.launch()
        harness.application.terminate()
        #expect(entered.wait(timeout: .now() + 10) == .success)
        harness.clock.advance(by: .seconds(2))
        let report = try #require(harness.control.reports.first)
        #expect(report.reason == .delegateTimeout(method: "applicationWillTerminate(_:)", limit: .seconds(2)))
        release.signal()
        harness.drain()
        #expect(harness.control.exits.isEmpty)
    }
}
