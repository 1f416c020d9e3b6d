import CourierLifecycle
import Dispatch
import Testing

/// Launch, background, suspension, foreground and termination, driven through the API.
@Suite("Transitions")
struct TransitionTests {
    typealias Call = RecordingDelegate.Call

    static let launchedThenBackground = [
        "didFinishLaunching", "didBecomeActive", "willResignActive", "didEnterBackground",
    ]

    @Test("delegate methods come in order, each seeing the right state")
    func orderAndStates() {
        let harness = LifecycleHarness()
        harness.launch()
        #expect(
            harness.delegate.calls == [
                Call(name: "didFinishLaunching", state: .inactive),
                Call(name: "didBecomeActive", state: .active),
            ]
        )
        #expect(harness.delegate.launchOptions == [.foreground])

        harness.enterBackground()
        harness.enterForeground()
        #expect(
            harness.delegate.calls.dropFirst(2) == [
                Call(name: "willResignActive", state: .inactive),
                Call(name: "didEnterBackground", state: .background),
                Call(name: "willEnterForeground", state: .inactive),
                Call(name: "didBecomeActive", state: .active),
            ]
        )
    }

    @Test("repeated requests for the current state do nothing")
    func idempotentRequests() {
        let harness = LifecycleHarness()
        harness.launch()
        harness.enterForeground()
        harness.enterBackground()
        harness.enterBackground()
        #expect(harness.delegate.names == Self.launchedThenBackground)
        #expect(harness.control.suspendCount == 1)
    }

    @Test("suspends only once applicationDidEnterBackground returned and the last task ended")
    func suspendsWhenIdle() {
        let harness = LifecycleHarness()
        let app = harness.application
        let foreground = app.beginBackgroundTask(withName: "foreground")
        harness.delegate.onDidEnterBackground { app in
            _ = app.beginBackgroundTask(withName: "flush")
        }
        harness.launch()
        harness.enterBackground()
        #expect(!app.isSuspended)
        #expect(harness.control.suspendCount == 0)
        let tasks = app.openBackgroundTasks
        #expect(tasks.map(\.name) == ["foreground", "flush"])

        app.endBackgroundTask(foreground)
        harness.drain()
        #expect(harness.control.suspendCount == 0)
        app.endBackgroundTask(tasks[1].identifier)
        harness.drain()
        #expect(app.isSuspended)
        #expect(app.applicationState == .background)
        #expect(harness.control.suspendCount == 1)

        harness.enterForeground()
        #expect(!app.isSuspended)
        #expect(app.applicationState == .active)
    }

    @Test("ending .invalid, an unknown or an already-ended task is harmless")
    func harmlessEnds() {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.launch()
        let keep = app.beginBackgroundTask(withName: "keep")
        let once = app.beginBackgroundTask(withName: "once")
        harness.enterBackground()
        app.endBackgroundTask(once)
        app.endBackgroundTask(once)
        app.endBackgroundTask(.invalid)
        app.endBackgroundTask(BackgroundTaskIdentifier(rawValue: 999_999))
        harness.drain()
        #expect(app.openBackgroundTasks.map(\.identifier) == [keep])
        #expect(harness.control.suspendCount == 0)
    }

    @Test("identifiers are unique and never reused")
    func uniqueIdentifiers() {
        let harness = LifecycleHarness()
        let app = harness.application
        var seen = Set<BackgroundTaskIdentifier>()
        for _ in 0..<100 {
            let id = app.beginBackgroundTask()
            #expect(id != .invalid)
            #expect(seen.insert(id).inserted)
            app.endBackgroundTask(id)
        }
    }

    @Test("terminate: background first, then applicationWillTerminate and exit 0 once the tasks end")
    func terminateWaitsForTasks() throws {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.delegate.onDidEnterBackground { app in
            _ = app.beginBackgroundTask(withName: "drain")
        }
        harness.launch()
        harness.terminate()
        #expect(harness.delegate.names == Self.launchedThenBackground)
        #expect(harness.control.events.isEmpty)

        // Terminating is irreversible: no return to the foreground.
        harness.enterForeground()
        #expect(app.applicationState == .background)

        let task = try #require(app.openBackgroundTasks.first)
        harness.advance(by: .seconds(60))
        app.endBackgroundTask(task.identifier)
        harness.drain()
        #expect(harness.delegate.names.last == "willTerminate")
        #expect(harness.control.events == [.exit(.normal)])
        #expect(Application.ExitStatus.normal.rawValue == 0)
    }

    @Test("terminate while suspended ends at once; terminate twice exits once")
    func terminateWhileSuspended() {
        let harness = LifecycleHarness()
        harness.launch()
        harness.enterBackground()
        #expect(harness.application.isSuspended)
        harness.terminate()
        harness.terminate()
        #expect(harness.delegate.names.filter { $0 == "willTerminate" }.count == 1)
        #expect(harness.control.events == [.suspend, .exit(.normal)])
    }

    @Test("terminate with tasks that outlive the budget ends with the watchdog")
    func terminateDeadline() throws {
        let harness = LifecycleHarness(budget: .seconds(30))
        harness.delegate.onDidEnterBackground { app in
            _ = app.beginBackgroundTask(withName: "never")
        }
        harness.launch()
        harness.terminate()
        harness.advance(by: .seconds(30))
        let report = try #require(harness.control.reports.first)
        #expect(report.openTasks.map(\.name) == ["never"])
        #expect(harness.control.exits.isEmpty)
        #expect(!harness.delegate.names.contains("willTerminate"))
    }

    @Test("launched into the background: didFinishLaunching, didEnterBackground, suspended; foreground later")
    func launchIntoBackground() {
        let harness = LifecycleHarness()
        let options = LaunchOptions(backgroundLaunchReason: .backgroundTransfer)
        harness.launch(options)
        #expect(
            harness.delegate.calls == [
                Call(name: "didFinishLaunching", state: .background),
                Call(name: "didEnterBackground", state: .background),
            ]
        )
        #expect(harness.delegate.launchOptions == [options])
        #expect(harness.control.suspendCount == 1)
        harness.enterForeground()
        #expect(harness.delegate.names.suffix(2) == ["willEnterForeground", "didBecomeActive"])
    }

    @Test("only the first launch counts")
    func launchOnce() {
        let harness = LifecycleHarness()
        harness.launch()
        harness.launch()
        #expect(harness.delegate.names == ["didFinishLaunching", "didBecomeActive"])
    }

    @Test("shutdown() returns after applicationWillTerminate without exiting the process")
    func shutdownReturns() async {
        let harness = LifecycleHarness()
        let app = harness.application
        harness.delegate.onDidEnterBackground { app in
            let id = app.beginBackgroundTask(withName: "last-save")
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
                app.endBackgroundTask(id)
            }
        }
        harness.launch()
        await app.shutdown()
        #expect(harness.delegate.names.suffix(3) == ["willResignActive", "didEnterBackground", "willTerminate"])
        #expect(harness.control.exits.isEmpty)
        await app.shutdown()  // already terminated: returns at once
    }

    @Test("an application without a delegate still runs its lifecycle")
    func noDelegate() {
        let harness = LifecycleHarness()
        let app = harness.application
        app.launch()
        harness.drain()
        #expect(app.applicationState == .active)
        app.enterBackground()
        harness.drain()
        #expect(app.isSuspended)
        app.terminate()
        harness.drain()
        #expect(harness.control.events == [.suspend, .exit(.normal)])
    }
}
