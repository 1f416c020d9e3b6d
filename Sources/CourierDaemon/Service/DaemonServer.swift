package import Courier
import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// courierd's front door: the socket under the runtime directory, a reader queue per connection, the peer check
/// before the first byte is read, and the IPC conversation of `docs/ipc.md` over the journal.
///
/// Each background session has a ``BackgroundSessionRunner`` that runs its transfers; the runners of the sessions in
/// the journal start with the daemon and take up the tasks an earlier run left.
///
/// `@unchecked Sendable`: `listener` is written once in `init`; everything that changes is in `state`, a lock.
package final class DaemonServer: @unchecked Sendable {
    package static let version = CourierVersion.current

    struct State {
        var stopping = false
        var connections: [Int32: ClientConnection] = [:]
        /// The suspended processes with an idle-reclaim check scheduled (``scheduleIdleReclaim(of:)``).
        var idleChecks: Set<pid_t> = []
        /// The downloads of each session that finished while its app was away, until the batch's notification.
        var finishedWhileAway: [String: Set<Int>] = [:]
    }

    let paths: DaemonPaths
    let journal: Journal
    let logger: Logger
    private let uid: uid_t
    private let listener: Int32
    /// False when systemd passed the listening socket (socket activation): its file is the socket unit's, and the
    /// socket is never shut down here (systemd keeps listening on it for the next start).
    private let ownsSocket: Bool
    /// Written by ``stop()`` to end the accept loop.
    private let stopPipe: (read: Int32, write: Int32)
    private let instance: InstanceLock
    let settings: TransferSettings
    /// Flushes finished downloads after they are handed over; their records are checked at start
    /// (``recoverUnsyncedFiles()``).
    let flusher: FileFlusher
    /// Fetches again files an app was handed that a power cut damaged (``recoverUnsyncedFiles()``).
    let repairs: FileRepairs
    let launcher: AppLauncher
    let notifier: DesktopNotifier?
    let backgroundWork: BackgroundWorkService
    private let pushEndpoint: PushEndpoint?
    let sessions = SessionRegistry()
    /// Waited on by the reclaim of suspended instances for their connections to end.
    let state = WaitableValue(State())
    /// The instances connected in the background, for the next courierd (``BackgroundInstanceRecords``).
    let instances: BackgroundInstanceRecords
    /// How long a suspended instance with no work left stays before it is reclaimed; nil: it stays.
    let idleReclaimDelay: TimeInterval?
    /// What each `hello` is answered with: which courierd this is.
    let welcome: IPCMessage.Welcome
    /// Bytes of events each connection's outbox holds for an app that is not reading before it withholds more
    /// (``ConnectionOutbox``).
    let clientOutboxLimit: Int
    package static let defaultClientOutboxLimit = ConnectionOutbox.defaultLimit

    /// Prepares the directories, takes the one-per-user lock, opens the journal and listens. Throws
    /// ``DaemonSetupError/alreadyRunning(lockFile:)`` when another courierd holds the lock.
    package init(
        paths: DaemonPaths,
        logger: Logger,
        settings: TransferSettings = TransferSettings(),
        relaunchLimiter: ResumeRateLimiter = ResumeRateLimiter(),
        notifier: DesktopNotifier? = nil,
        fetchPolicy: FetchScheduler.Policy = FetchScheduler.Policy(),
        pushBudget: PushBudget = PushBudget(),
        pushPort: UInt16? = nil,
        idleReclaimDelay: TimeInterval? = DaemonServer.defaultIdleReclaimDelay,
        clientOutboxLimit: Int = DaemonServer.defaultClientOutboxLimit,
        uid: uid_t = getuid()
    ) throws(DaemonSetupError) {
        try paths.prepare(uid: uid)
        instance = try InstanceLock(path: paths.lockFile.path)
        do {
            journal = try Journal(at: paths.journal, logger: logger)
        } catch {
            throw .cannotCreate(path: paths.journal.path, reason: "\(error)")
        }
        // The directories of courierd's files, made with their names flushed before any file in them is journaled (a
        // file whose directory's name a power cut undoes is lost with it). A failure shows where a file is made.
        for directory in [paths.staging, paths.partials, paths.downloads, paths.uploads] {
            try? DurableDirectory.make(directory)
        }
        if let inherited = SocketActivation.inheritedListener() {
            listener = inherited
            ownsSocket = false
        } else {
            listener = try UnixSocket.listen(at: paths.socket.path)
            ownsSocket = true
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw .cannotCreate(path: "a pipe", reason: String(cString: strerror(errno)))
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        stopPipe = (ends[0], ends[1])
        self.paths = paths
        self.logger = logger
        welcome = IPCMessage.Welcome(
            daemonVersion: DaemonServer.version,
            pid: getpid(),
            executable: ThisExecutable.path,
            runtimeDirectory: paths.runtimeDirectory.path,
            stateDirectory: paths.stateDirectory.path,
            startedAt: Date()
        )
        self.settings = settings
        flusher = FileFlusher(
            journal: journal,
            directory: paths.downloads,
            delay: settings.fileFlushDelay,
            patience: settings.fileFlushPatience,
            transfersRunning: { [slots = settings.slots] in slots.counts.running > 0 },
            logger: logger
        )
        repairs = FileRepairs(journal: journal, logger: logger)
        self.idleReclaimDelay = idleReclaimDelay
        self.clientOutboxLimit = clientOutboxLimit
        self.uid = uid
        launcher = AppLauncher(limiter: relaunchLimiter, logger: logger, paths: paths)
        self.notifier = notifier
        let backgroundWork = BackgroundWorkService(
            journal: journal,
            launcher: launcher,
            notifier: notifier,
            fetchPolicy: fetchPolicy,
            pushBudget: pushBudget,
            logger: logger
        )
        self.backgroundWork = backgroundWork
        instances = BackgroundInstanceRecords(runtimeDirectory: paths.runtimeDirectory, logger: logger)
        instances.reclaimLeftovers(grace: Self.reclaimGrace)
        if let pushPort {
            let portFile = paths.runtimeDirectory.appendingPathComponent("push-port")
            pushEndpoint = try PushEndpoint(port: pushPort, portFile: portFile, logger: logger) {
                backgroundWork.push($0)
            }
        } else {
            pushEndpoint = nil
        }
        restoreSessions()
        logger.info(
            "listening",
            metadata: [
                "socket": "\(paths.socket.path)", "journal": "\(paths.journal.path)",
                "activation": "\(ownsSocket ? "none" : "socket passed by systemd")",
            ]
        )
    }

    /// Accepts connections until ``stop()``; each is read on a queue of its own (``ConnectionReader``). Removes the
    /// socket before it returns (on the caller's thread, so the process cannot exit before it is gone), then stops
    /// every session's transfers. Returns false when a transfer engine was not destroyed in time or a libuv loop closed with handles
    /// still open.
    package func run() -> Bool {
        // The apps of the courierd before this one reconnect from now: their grace starts here, not before the
        // journal was restored.
        launcher.accepting()
        AcceptLoop.run(on: listener, stoppedBy: stopPipe.read) { descriptor in
            let who = PeerCredentials.of(socket: descriptor)
            guard let peer = who, peer.isAdmitted(byDaemonOf: uid) else {
                logger.warning(
                    "refused a connection from another user",
                    metadata: ["uid": "\(who.map { String($0.uid) } ?? "unknown")", "pid": "\(who?.pid ?? 0)"]
                )
                close(descriptor)
                return true
            }
            let connection = ClientConnection(
                descriptor: descriptor,
                pid: peer.pid,
                outboxLimit: clientOutboxLimit,
                durability: { [journal] in journal.sync() },
                caughtUp: { [sessions] in
                    for session in sessions.held(by: descriptor) {
                        sessions.runner(session, heldBy: descriptor)?.catchUp(owner: descriptor)
                    }
                }
            )
            let admitted = state.withLock { state -> Bool in
                guard !state.stopping else {
                    return false
                }
                state.connections[descriptor] = connection
                return true
            }
            guard admitted else {
                close(descriptor)
                return false
            }
            serve(connection)
            return true
        }
        if ownsSocket {
            unlink(paths.socket.path)
        }
        backgroundWork.stop()
        pushEndpoint?.stop()
        for runner in sessions.removeAllRunners() {
            runner.stop()
        }
        repairs.stop()
        flusher.drain()
        do {
            try journal.foldWriteAheadLog()
        } catch {
            logger.error("the journal's write-ahead log was not folded into it", metadata: ["error": "\(error)"])
        }
        let clean = EngineCensus.waitForNoLiveEngines(atMost: 5) && EngineCensus.leakedLoops == 0
        if clean {
            logger.info("stopped")
        } else {
            logger.error(
                "stopped with transfer engines left or libuv handles open",
                metadata: ["engines": "\(EngineCensus.liveEngines)", "leakedLoops": "\(EngineCensus.leakedLoops)"]
            )
        }
        return clean
    }

    /// Stops accepting and closes every connection; ``run()`` then removes the socket and returns. The lock goes with
    /// this object.
    package func stop() {
        // Under the lock: a connection closes its descriptor under the same lock, so no descriptor shut down here
        // can have been closed and reused meanwhile.
        state.withLock { state in
            state.stopping = true
            for connection in state.connections.values {
                connection.shutDown()
            }
        }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        if ownsSocket {
            shutdown(listener, Int32(SHUT_RDWR))
        }
    }

    deinit {
        close(listener)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// The runner of `configuration`'s session (made and kept the first time), told of the configuration.
    @discardableResult
    func makeRunner(_ configuration: IPCMessage.OpenSession) -> BackgroundSessionRunner {
        sessions.runner(for: configuration) {
            BackgroundSessionRunner(
                configuration: configuration,
                journal: journal,
                paths: paths,
                settings: settings,
                flusher: flusher,
                logger: logger,
                // Strong: the cycle (server → runner → closure → server) ends when `run()` drops the runners.
                undelivered: { [self] session, events in self.endedWhileAway(session, events) }
            )
        }
    }

    // MARK: One connection

    /// Answers `connection`'s messages as they come (on its reader queue) until it closes, then releases what it
    /// held.
    private func serve(_ connection: ClientConnection) {
        let reader = ConnectionReader(
            descriptor: connection.descriptor,
            handle: { [self] messages in handle(messages, on: connection) },
            failure: { error in _ = connection.send(.failure(.init(request: nil, error: error))) },
            ended: { [self] reason in connectionEnded(connection, reason: reason) }
        )
        reader.start()
    }

    /// `connection`'s reading ended: what it held is released, then its descriptor is closed.
    private func connectionEnded(_ connection: ClientConnection, reason: String) {
        // Before the descriptor closes (it could be reused): no wake is written to it after this.
        backgroundWork.disconnected(connection.descriptor)
        // Released before the descriptor closes: no session names a descriptor that could be reused.
        let released = sessions.releaseAll(heldBy: connection.descriptor)
        // Kept when courierd stops: the next one reclaims the instance if it is still suspended then.
        if !state.withLock({ $0.stopping }) {
            instances.forget(pid: connection.pid, descriptor: connection.descriptor)
        }
        connection.closeOutbox()
        state.withLock { state in
            state.connections[connection.descriptor] = nil
            close(connection.descriptor)
        }
        logger.info(
            "connection closed",
            metadata: [
                "pid": "\(connection.pid)", "app": "\(connection.app ?? "-")", "reason": "\(reason)",
                "sessions": "\(released.joined(separator: ","))",
            ]
        )
    }
}
