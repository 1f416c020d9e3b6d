import CourierConcurrency
import Foundation
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The shared machinery behind a ``Session``: its transfer backend, task registry, delegate dispatch.
///
/// Tasks hold the core (not the session), so a session the user releases can cancel its tasks and destroy its
/// backend while tasks are still referenced. The core refers to its session weakly.
final class SessionCore: Sendable {
    enum Invalidation: Sendable, Equatable {
        case valid
        /// `finishTasksAndInvalidate()`: no new tasks; invalid when the last one completes.
        case finishing
        case invalidated
    }

    enum BackendSlot {
        case idle
        case running(any TransferBackend)
        case failed(CourierError)
        case closed
    }

    private struct Registry {
        var tasks: [Int: SessionTask] = [:]
        var invalidation = Invalidation.valid
        /// Tasks that left ``tasks`` and whose completion is not queued yet (``unregister(key:task:)`` …
        /// ``completionQueued()``): `didBecomeInvalid` waits for them too. Without this, with two loop threads the
        /// last task's thread could queue `didBecomeInvalid` while another thread still held an earlier task's
        /// completion in its unqueued batch.
        var completionsUnqueued = 0

        /// No task left and no completion left to queue.
        var isIdle: Bool {
            tasks.isEmpty && completionsUnqueued == 0
        }
    }

    let configuration: SessionConfiguration
    let dispatcher: DelegateDispatcher
    let isTaskDelegate: Bool
    let isDataDelegate: Bool
    let isDownloadDelegate: Bool
    let logger: Logger?
    let stagingDirectory: URL
    /// ``stagingDirectory``'s path, the parent of every staging file's (``makeStagingFile()``).
    private let stagingPath: String
    /// The session's figures and spans.
    let telemetry: SessionTelemetry

    private let delegateSlot: LockedValue<(any SessionDelegate)?>
    /// Whether the delegate is offered server-trust challenges: an in-process session with a delegate (courierd
    /// verifies a background session's servers itself).
    let offersServerTrust: Bool
    /// The servers the delegate judged, and whether it judges them.
    let serverTrust = LockedValue(ServerTrustDecisions())
    let backendSlot = LockedValue(BackendSlot.idle)
    private let registry = LockedValue(Registry())
    let nextIdentifier = LockedValue(1)
    private let sessionReference = SessionReference()
    /// Called after `didBecomeInvalidWithError` (``Session/invalidateAndCancel(then:)``).
    private let invalidationWaiters = LockedValue<[@Sendable () -> Void]>([])

    init(configuration: SessionConfiguration, delegate: (any SessionDelegate)?, queue: OperationQueue) {
        self.configuration = configuration
        self.delegateSlot = LockedValue(delegate)
        self.isTaskDelegate = delegate is any SessionTaskDelegate
        self.isDataDelegate = delegate is any SessionDataDelegate
        self.isDownloadDelegate = delegate is any SessionDownloadDelegate
        self.offersServerTrust = delegate != nil && configuration.identifier == nil
        self.logger = configuration.logger
        self.telemetry = SessionTelemetry(configuration)
        let stagingDirectory = configuration.temporaryDirectory
            .appendingPathComponent("courier-session-\(UUID().uuidString)", isDirectory: true)
        self.stagingDirectory = stagingDirectory
        self.stagingPath = stagingDirectory.path
        let sessionReference = self.sessionReference
        self.dispatcher = DelegateDispatcher(queue: queue) {
            sessionReference.session
        }
        if let identifier = configuration.identifier {
            openBackground(identifier, hasDelegate: delegate != nil)
        }
    }

    func attach(_ session: Session) {
        sessionReference.session = session
    }

    var delegate: (any SessionDelegate)? {
        delegateSlot.withLock { $0 }
    }

    var taskDelegate: (any SessionTaskDelegate)? {
        delegate as? any SessionTaskDelegate
    }

    /// The next task identifier. A background session's go on from courierd's journal: the first call waits for the
    /// opening (``waitUntilBackgroundOpened()``).
    func makeIdentifier() -> Int {
        waitUntilBackgroundOpened()
        return nextIdentifier.withLock { next in
            defer { next += 1 }
            return next
        }
    }

    /// For a background session, blocks until its opening (which `Session.init` starts) settled: a round trip on a
    /// local socket, or as long as courierd takes to start when none ran (`getAllTasks` waits for it without
    /// blocking); after that, an atomic load. Nothing for any other session.
    func waitUntilBackgroundOpened() {
        if configuration.identifier != nil, let backend = runningBackend as? DaemonBackend {
            backend.waitUntilOpened()
        }
    }

    // MARK: Backend

    /// The session's transfer backend (the in-process engine), created on first use: a session that never runs a
    /// task starts no thread.
    func backend() -> Result<any TransferBackend, CourierError> {
        backendSlot.withLock { slot in
            switch slot {
            case .running(let backend):
                return .success(backend)
            case .failed(let error):
                return .failure(error)
            case .closed:
                return .failure(CourierError(.sessionInvalidated, "the session was invalidated"))
            case .idle:
                let engineConfiguration = EngineConfiguration(
                    loopCount: configuration.engineLoopCount,
                    maximumHostConnections: configuration.httpMaximumConnectionsPerHost,
                    maximumActiveTransfers: configuration.maximumConcurrentTransfers,
                    trustedCertificatesPEM: configuration.trustedCertificateAuthorities.pem,
                    diskWriteDelay: configuration.simulatedDiskWriteDelay,
                    rateLimiters: (configuration.bandwidthLimit.flatMap(BandwidthLimiter.init).map { [$0] } ?? [])
                        + configuration.sharedBandwidthLimiters
                )
                let serialised = configuration.serialisesBackend
                // The segmenting backend wraps the engine, whose events it folds: the engine's callback finds it
                // through a weak reference (it holds the engine).
                let segmenting = WeakSegmentingBackend()
                do throws(CourierError) {
                    let engine = try Engine(configuration: engineConfiguration) { [weak self] batch in
                        let events = segmenting.backend?.rewrite(batch) ?? batch
                        self?.handle(serialised ? SerialisedBackend.carry(events) : events)
                    }
                    let inner: any TransferBackend = serialised ? SerialisedBackend(engine) : engine
                    let backend = SegmentingBackend(inner) { [weak self] events in
                        self?.handle(serialised ? SerialisedBackend.carry(events) : events)
                    }
                    segmenting.backend = backend
                    // A session with protocol classes asks them before the network (Interception/).
                    let running: any TransferBackend =
                        configuration.protocolClasses.isEmpty
                        ? backend
                        : InterceptingBackend(
                            backend,
                            protocolClasses: configuration.protocolClasses,
                            task: { [weak self] key in self?.task(forKey: key) },
                            emit: { [weak self] events in self?.handle(events) }
                        )
                    slot = .running(running)
                    logger?.debug("engine started", metadata: ["loops": "\(configuration.engineLoopCount)"])
                    return .success(running)
                } catch {
                    slot = .failed(error)
                    return .failure(error)
                }
            }
        }
    }

    /// The running backend, if there is one (commands for live transfers).
    var runningBackend: (any TransferBackend)? {
        backendSlot.withLock { slot in
            if case .running(let backend) = slot {
                return backend
            }
            return nil
        }
    }

    private func closeBackend() -> (any TransferBackend)? {
        backendSlot.withLock { slot in
            defer { slot = .closed }
            if case .running(let backend) = slot {
                return backend
            }
            return nil
        }
    }

    // MARK: Events

    /// Handles one backend batch on a backend thread: routes each event to its task, then hands the delegate work
    /// of the whole batch to the dispatcher as one unit.
    func handle(_ batch: [TransferEvent]) {
        guard !batch.isEmpty else {
            return
        }
        let tasks: [SessionTask?] = registry.withLock { registry in
            batch.map { registry.tasks[$0.id.task] }
        }
        var work = DelegateWork()
        for (event, task) in zip(batch, tasks) {
            task?.send(.event(hop: event.id.hop, event), work: &work)
        }
        dispatcher.enqueue(work)
    }

    // MARK: Registry and invalidation

    /// Registers a task that is starting; false when the session no longer accepts tasks.
    func register(_ task: SessionTask, key: Int) -> Bool {
        registry.withLock { registry in
            guard registry.invalidation == .valid else {
                return false
            }
            registry.tasks[key] = task
            return true
        }
    }

    /// The live task registered under `key`.
    func task(forKey key: Int) -> SessionTask? {
        registry.withLock { $0.tasks[key] }
    }

    /// Points a registry key at another task (a data task that became a download task).
    func replace(key: Int, with task: SessionTask) {
        registry.withLock { $0.tasks[key] = task }
    }

    /// A task is ending: forget it. The caller queues the task's completion, then calls ``completionQueued()``.
    func unregister(key: Int, task: SessionTask) {
        registry.withLock { registry in
            if registry.tasks[key] === task {
                registry.tasks[key] = nil
            }
            registry.completionsUnqueued += 1
        }
    }

    /// The completion of a task that called ``unregister(key:task:)`` is queued (or was delivered inline). When
    /// that completed a pending invalidation, queues `didBecomeInvalid` after it.
    func completionQueued() {
        let becameInvalid = registry.withLock { registry -> Bool in
            registry.completionsUnqueued -= 1
            if registry.invalidation == .finishing && registry.isIdle {
                registry.invalidation = .invalidated
                return true
            }
            return false
        }
        if becameInvalid {
            queueInvalidation()
        }
    }

    var liveTasks: [SessionTask] {
        registry.withLock { Array($0.tasks.values) }
    }

    var acceptsTasks: Bool {
        registry.withLock { $0.invalidation == .valid }
    }

    func finishTasksAndInvalidate() {
        let becameInvalid = registry.withLock { registry -> Bool in
            guard registry.invalidation == .valid else {
                return false
            }
            if registry.isIdle {
                registry.invalidation = .invalidated
                return true
            }
            registry.invalidation = .finishing
            return false
        }
        if becameInvalid {
            queueInvalidation()
        }
    }

    func invalidateAndCancel() {
        let decision = registry.withLock { registry -> (tasks: [SessionTask], invalidNow: Bool)? in
            guard registry.invalidation != .invalidated else {
                return nil
            }
            if registry.isIdle {
                registry.invalidation = .invalidated
                return ([], true)
            }
            registry.invalidation = .finishing
            return (Array(registry.tasks.values), false)
        }
        guard let decision else {
            return
        }
        if decision.invalidNow {
            queueInvalidation()
            return
        }
        for task in decision.tasks {
            task.cancel()
        }
    }

    /// Queues `didBecomeInvalidWithError(nil)` after everything already queued, then releases the delegate and
    /// tears the backend down off the loop threads.
    private func queueInvalidation() {
        let backend = closeBackend()
        var work = DelegateWork()
        work.append { [self] session in
            // A background session's link ends first, its acknowledgements taken by courierd: by the time the
            // delegate hears of the invalidation, another Session of this process may take the identifier.
            (backend as? DaemonBackend)?.finish(acknowledgingAll: true)
            if let session, let delegate = self.delegate {
                delegate.urlSession(session, didBecomeInvalidWithError: nil)
            }
            self.delegateSlot.withLock { $0 = nil }
            self.removeStagingDirectory()
            for waiter in self.invalidationWaiters.withLock({ waiters in defer { waiters = [] }; return waiters }) {
                waiter()
            }
            if let backend {
                DispatchQueue.global(qos: .utility).async {
                    withExtendedLifetime(backend) {}
                }
            }
        }
        dispatcher.enqueue(work)
        logger?.debug("session invalidated")
    }

    /// Calls `waiter` after the invalidation's delegate call (never when the session is already invalid).
    func whenInvalidated(_ waiter: @escaping @Sendable () -> Void) {
        invalidationWaiters.withLock { $0.append(waiter) }
    }

    /// The session was released without being invalidated: cancel every task and destroy the engine.
    func sessionReleased() {
        let tasks = registry.withLock { registry -> [SessionTask] in
            let tasks = Array(registry.tasks.values)
            registry.tasks = [:]
            registry.invalidation = .invalidated
            return tasks
        }
        // Destroying the engine cancels every transfer without COMPLETE events; Engine.deinit defers the
        // destruction when this runs on a loop thread. A background session's link ends at once.
        (closeBackend() as? DaemonBackend)?.end()
        var work = DelegateWork()
        for task in tasks {
            task.abandon(work: &work)
        }
        work.append { [self] _ in
            self.delegateSlot.withLock { $0 = nil }
            self.removeStagingDirectory()
        }
        dispatcher.enqueue(work)
    }

    // MARK: Files

    func makeStagingFile() -> Result<URL, CourierError> {
        do {
            // 0700: the files in it are made with the usual mode (0666 less the umask) for the app to move, and
            // must not be readable by other users while they are written (the temporary directory is shared).
            try FileManager.default.makeDirectory(at: stagingDirectory, mode: 0o700)
        } catch {
            return .failure(CourierError(.cannotCreateFile, "cannot create the staging directory: \(error)"))
        }
        // A file, said so (a name appended without saying is looked up on disk: a `stat` per download), made from the
        // path: appending to the URL parses and checks the whole URL again (5 µs against 2.7 µs).
        let path = stagingPath + "/download-" + UniqueFileName.make() + ".part"
        return .success(URL(fileURLWithPath: path, isDirectory: false))
    }

    private func removeStagingDirectory() {
        try? FileManager.default.removeItem(at: stagingDirectory)
    }

    // MARK: Cookies and HSTS

    /// Keeps what a response from `url` sets: its cookies, its `Strict-Transport-Security`.
    func remember(_ head: ResponseHead, url: URL) {
        if let field = head.value("Strict-Transport-Security") {
            configuration.hstsStorage?.observe(field, from: url)
        }
        guard configuration.httpShouldSetCookies, let storage = configuration.httpCookieStorage else {
            return
        }
        storage.store(setCookieValues: head.setCookies, from: url, policy: configuration.httpCookieAcceptPolicy)
    }

    func cookieHeader(for url: URL) -> String? {
        guard configuration.httpShouldSetCookies, let storage = configuration.httpCookieStorage else {
            return nil
        }
        return storage.cookieHeader(for: url)
    }
}

/// The weak link from the core to its public session.
final class SessionReference: Sendable {
    private struct Weak {
        weak var session: Session?
    }

    private let slot = LockedValue(Weak())

    var session: Session? {
        get { slot.withLock { $0.session } }
        set { slot.withLock { $0.session = newValue } }
    }
}
