public import ServiceLifecycle

/// Lets a swift-service-lifecycle program's graceful shutdown go through the application lifecycle:
/// when the `ServiceGroup` shuts down gracefully (on SIGTERM, say), the application enters the
/// background so that its background tasks finish within the budget, `applicationWillTerminate`
/// runs, and then this service returns so the group can finish.
///
/// ```swift
/// let application = Application.shared
/// application.launch(delegate: AppDelegate())
/// application.installSignalHandlers([.terminalStop, .continue])  // the group owns SIGTERM
/// let group = ServiceGroup(
///     services: [server, ApplicationLifecycleService(application: application)],
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger
/// )
/// try await group.run()
/// ```
///
/// The application should be launched before the group runs. If the budget runs out with tasks
/// still open, the watchdog terminates the process as usual. Cancellation before graceful shutdown
/// makes ``run()`` return at once, without shutting the application down.
public struct ApplicationLifecycleService: Service {
    private let application: Application
    private let waitForShutdown: @Sendable () async throws -> Void

    public init(application: Application = .shared) {
        self.init(application: application, waitForShutdown: { try await gracefulShutdown() })
    }

    /// For tests: `waitForShutdown` stands in for swift-service-lifecycle's `gracefulShutdown()`.
    init(application: Application, waitForShutdown: @escaping @Sendable () async throws -> Void) {
        self.application = application
        self.waitForShutdown = waitForShutdown
    }

    /// Waits for graceful shutdown, then shuts the application down (``Application/shutdown()``) and
    /// returns once its background tasks have ended and `applicationWillTerminate` has returned.
    public func run() async throws {
        do {
            try await self.waitForShutdown()
        } catch {
            return  // cancelled before graceful shutdown: nothing to wind down
        }
        await self.application.shutdown()
    }
}
