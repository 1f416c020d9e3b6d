// White-box tests use the internal initializer that stands in for swift-service-lifecycle's graceful
// shutdown; the last suite runs the service in a real ServiceGroup.
@testable import CourierLifecycle
import Dispatch
import Logging
import ServiceLifecycle
import Testing

@Suite("ApplicationLifecycleService (internal)")
struct ApplicationLifecycleServiceInternalTests {
    @Test("graceful shutdown enters the background and returns once the background tasks have ended")
    func gracefulShutdown() async throws {
        let harness = LifecycleHarness()
        harness.delegate.onDidEnterBackground { app in
            let id = app.beginBackgroundTask(withName: "finish-requests")
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(30)) {
                app.endBackgroundTask(id)
            }
        }
        harness.launch()
        let (trigger, continuation) = AsyncStream<Void>.makeStream()
        let service = ApplicationLifecycleService(application: harness.application) {
            for await _ in trigger { return }
        }
        let run = Task { try await service.run() }
        continuation.yield()
        try await run.value
        #expect(harness.delegate.names.suffix(3) == ["willResignActive", "didEnterBackground", "willTerminate"])
        #expect(harness.application.openBackgroundTasks.isEmpty)
        #expect(harness.control.exits.isEmpty)  // the service group, not the lifecycle, ends the process
    }

    @Test("cancellation before graceful shutdown returns without shutting the application down")
    func cancelled() async throws {
        let harness = LifecycleHarness()
        harness.launch()
        let service = ApplicationLifecycleService(application: harness.application) {
            try await Task.sleep(for: .seconds(600))
        }
        let run = Task { try await service.run() }
        run.cancel()
        try await run.value
        harness.drain()
        #expect(harness.application.applicationState == .active)
        #expect(harness.delegate.names == ["didFinishLaunching", "didBecomeActive"])
    }
}

@Suite("ApplicationLifecycleService in a real ServiceGroup")
struct ApplicationLifecycleServiceGroupTests {
    @Test("the group's graceful shutdown lets background tasks finish, then the group returns")
    func groupGracefulShutdown() async throws {
        let harness = LifecycleHarness()
        harness.delegate.onDidEnterBackground { app in
            let id = app.beginBackgroundTask(withName: "drain")
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
                app.endBackgroundTask(id)
            }
        }
        harness.launch()
        let group = ServiceGroup(
            services: [ApplicationLifecycleService(application: harness.application)],
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let run = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(20))
        await group.triggerGracefulShutdown()
        try await run.value
        #expect(harness.delegate.names.suffix(3) == ["willResignActive", "didEnterBackground", "willTerminate"])
        #expect(harness.application.openBackgroundTasks.isEmpty)
        #expect(harness.control.exits.isEmpty)
    }
}
