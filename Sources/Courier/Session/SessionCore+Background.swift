import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A background session's core: its backend is courierd (``DaemonBackend``), whose opening starts when the session is
/// made and goes on without the caller.
extension SessionCore {
    /// Starts opening the session with courierd (connecting, starting it if needed, adopting an earlier run's tasks)
    /// on the backend's own queue: no I/O on the caller's thread. When the opening fails, or the identifier is held by
    /// another live session of this process, every task of the session fails at `resume()` with that error
    /// (`backgroundSessionInUse`, `backgroundSessionWasDisconnected`, …), and the failure is said as it happens: to the
    /// session's logger, or on standard error when it has none.
    func openBackground(_ identifier: String, hasDelegate: Bool) {
        guard hasDelegate else {
            let error = CourierError(
                .unsupportedInBackgroundSession,
                "a background session needs a delegate: its events are delivered only to the delegate"
            )
            backendSlot.withLock { $0 = .failed(error) }
            return
        }
        let paths = configuration.daemonPaths ?? DaemonPaths.current
        guard let claim = BackgroundIdentifierClaim.take(identifier, paths: paths) else {
            let error = CourierError(
                .backgroundSessionInUse,
                "a Session of this process already holds the background identifier \(identifier): keep using it (it "
                    + "reconnects to courierd by itself), or invalidate it before making another"
            )
            backendSlot.withLock { $0 = .failed(error) }
            report(notOpened: identifier, error)
            return
        }
        var launchCommand: [String]?
        if configuration.sessionSendsLaunchEvents {
            launchCommand = configuration.backgroundLaunchCommand ?? Application.backgroundLaunchCommand
        }
        let opener = DaemonSessionOpener(
            paths: paths,
            app: DaemonConnection.appName,
            launchCommand: launchCommand,
            session: IPCMessage.OpenSession(
                request: 0,
                identifier: identifier,
                sendsLaunchEvents: configuration.sessionSendsLaunchEvents,
                isDiscretionary: configuration.isDiscretionary,
                allowsExpensiveNetworkAccess: configuration.allowsExpensiveNetworkAccess,
                resourceTimeout: configuration.timeoutIntervalForResource,
                requestTimeout: configuration.timeoutIntervalForRequest,
                additionalHeaders: configuration.httpAdditionalHeaders ?? [:],
                maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
                trustedCertificatesPEM: configuration.trustedCertificateAuthorities.pem
            )
        )
        let hooks = DaemonBackend.Hooks(
            deliver: { [weak self] events in self?.handle(events) },
            afterDelivery: { [weak self] item in
                var work = DelegateWork()
                work.append(item)
                self?.dispatcher.enqueue(work)
            },
            // Task identifiers go on from courierd's: at the opening and at each reopening after a lost connection.
            continueIdentifiers: { [weak self] next in
                self?.nextIdentifier.withLock { $0 = max($0, next) }
            },
            adopt: { [weak self] snapshots in self?.adoptBackgroundTasks(snapshots) },
            notOpened: { [weak self] error in self?.report(notOpened: identifier, error) }
        )
        let backend = DaemonBackend(
            opener: opener,
            claim: claim,
            relaunched: Application.launchedForBackgroundSession == identifier,
            requestTimeout: configuration.timeoutIntervalForRequest,
            hooks: hooks
        )
        backendSlot.withLock { $0 = .running(backend) }
        backend.start()
    }

    /// Says that the background session `identifier` was not opened, and why: to the session's logger, or on standard
    /// error when it has none.
    private func report(notOpened identifier: String, _ error: CourierError) {
        if let logger {
            logger.error(
                "background session not opened",
                metadata: ["identifier": "\(identifier)", "error": "\(error)"]
            )
        } else {
            FileHandle.standardError.write(Data("background session \(identifier) not opened: \(error)\n".utf8))
        }
    }

    /// After a relaunch: recreates a task object for each of the daemon's tasks of this session (same identifier,
    /// description and request), so that `getAllTasks` lists them and their pending events reach the delegate. Called
    /// once by the backend, on its link's queue, after the first opening and before any event is handed over.
    private func adoptBackgroundTasks(_ snapshots: [IPCMessage.TaskSnapshot]) {
        for snapshot in snapshots {
            guard let spec = snapshot.task else {
                continue
            }
            let task: SessionTask
            switch spec.kind {
            case .download:
                task = DownloadTask(
                    core: self,
                    kind: .download,
                    identifier: spec.identifier,
                    request: spec.request,
                    sink: .delegate
                )
            case .upload:
                task = UploadTask(
                    core: self,
                    kind: .upload,
                    identifier: spec.identifier,
                    request: spec.request,
                    sink: .delegate,
                    // The body is courierd's to send (its copy may be gone already): nothing to read here.
                    uploadBody: .heldByDaemon
                )
            case .data:
                // Beyond Apple: courierd ran it to a file of its own; the body comes back as data.
                task = DataTask(
                    core: self,
                    kind: .data,
                    identifier: spec.identifier,
                    request: spec.request,
                    sink: .delegate
                )
            }
            task.taskDescription = spec.taskDescription
            task.priority = spec.priority
            task.resume()
        }
    }
}

extension Session {
    /// Drops this background session's connection to courierd without a word, as when the app is killed: the
    /// daemon releases the identifier and keeps its events until a new session takes them. For tests and tools
    /// that stand in for a dying app.
    package func abandonBackgroundConnection() {
        (core.runningBackend as? DaemonBackend)?.end()
    }
}

extension Session {
    /// Returns once courierd has answered the creation of every task of this background session resumed so far (each
    /// journaled, or ended with courierd's refusal), or after `timeout`; whether it had. `resume()` does not wait for
    /// the answer; the `courier` tool does, to say which transfers courierd took before it exits.
    @discardableResult
    package func waitForBackgroundAnswers(timeout: Double = 30) -> Bool {
        (core.runningBackend as? DaemonBackend)?.waitForAnswers(timeout: timeout) ?? true
    }

    /// Leaves courierd as an app that exits does, but only once courierd has taken the acknowledgements of every
    /// event delivered so far (they are queued behind the delegate calls of their batch, and this behind them), so
    /// that none is delivered again to the next process that opens the session; the tasks go on in courierd, neither
    /// cancelled nor waited for. Then calls `left`, on the delegate queue. For the `courier` tool, which exits once the
    /// transfers it waited for have ended (`--wait`), while other tasks of its session may still run.
    package func leaveBackgroundSession(then left: @escaping @Sendable () -> Void) {
        guard let backend = core.runningBackend as? DaemonBackend else {
            left()
            return
        }
        backend.afterBatchesHandedOver { [core] in
            var work = DelegateWork()
            work.append { _ in
                backend.finish()
                left()
            }
            core.dispatcher.enqueue(work)
        }
    }

    /// Why this session could not be opened with courierd (`backgroundSessionInUse`,
    /// `backgroundSessionWasDisconnected`, …), as its tasks would fail at `resume()`; nil when it was opened, and
    /// for a session that is not a background one. Waits for the opening, which `Session.init` only starts. For the
    /// `courier` tool, which waits while another instance of itself holds its session.
    package var backgroundOpeningFailure: CourierError? {
        get async {
            await withCheckedContinuation { continuation in
                whenBackgroundOpened { continuation.resume(returning: $0) }
            }
        }
    }

    /// ``backgroundOpeningFailure``, blocking the calling thread until the opening settled.
    @available(*, noasync, message: "use backgroundOpeningFailure")
    package func waitForBackgroundOpening() -> CourierError? {
        let failure = WaitableValue<CourierError??>(nil)
        whenBackgroundOpened { opened in failure.withLock { $0 = .some(opened) } }
        failure.wait(until: { $0 != nil })
        return failure.withLock { $0 ?? nil }
    }

    /// Calls `body` once the background session's opening settled, with its failure if any.
    func whenBackgroundOpened(_ body: @escaping @Sendable (CourierError?) -> Void) {
        guard configuration.identifier != nil else {
            body(nil)
            return
        }
        switch core.backendSlot.withLock({ $0 }) {
        case .failed(let error):
            body(error)
        case .running(let backend as DaemonBackend):
            backend.whenOpened(body)
        default:
            body(nil)
        }
    }
}
