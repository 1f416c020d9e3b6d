package import Courier
import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// courierd's front door: the socket under the runtime directory, one reader thread per connection, the peer check
/// before the first byte is read, and the IPC conversation of `docs/ipc.md` over the journal.
///
/// Each background session has a ``BackgroundSessionRunner`` that runs its transfers; the runners of the sessions in
/// the journal start with the daemon and take up the tasks an earlier run left.
///
/// `@unchecked Sendable`: `listener` is written once in `init`; everything that changes is in `state`, a lock.
package final class DaemonServer: @unchecked Sendable {
    package static let version = "0.1"

    private struct State {
        var stopping = false
        var connections: [Int32: Connection] = [:]
        /// Which connection holds each open session (one live session per identifier).
        var sessionOwners: [String: Int32] = [:]
        /// The runner of every journaled session, by identifier.
        var runners: [String: BackgroundSessionRunner] = [:]
    }

    private let paths: DaemonPaths
    private let journal: Journal
    private let logger: Logger
    private let uid: uid_t
    private let listener: Int32
    private let instance: InstanceLock
    private let settings: TransferSettings
    private let launcher: AppLauncher
    private let notifier: DesktopNotifier?
    private let backgroundWork: BackgroundWorkService
    private let pushEndpoint: PushEndpoint?
    private let state = LockedValue(State())

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
        uid: uid_t = getuid()
    ) throws(DaemonSetupError) {
        try paths.prepare(uid: uid)
        instance = try InstanceLock(path: paths.lockFile.path)
        do {
            journal = try Journal(at: paths.journal, logger: logger)
        } catch {
            throw .cannotCreate(path: paths.journal.path, reason: "\(error)")
        }
        listener = try UnixSocket.listen(at: paths.socket.path)
        self.paths = paths
        self.logger = logger
        self.settings = settings
        self.uid = uid
        launcher = AppLauncher(limiter: relaunchLimiter, logger: logger)
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
        if let pushPort {
            pushEndpoint = try PushEndpoint(port: pushPort, portFile: paths.runtimeDirectory.appendingPathComponent("push-port"), logger: logger) {
                backgroundWork.push($0)
            }
        } else {
            pushEndpoint = nil
        }
        restoreSessions()
        logger.info("listening", metadata: ["socket": "\(paths.socket.path)", "journal": "\(paths.journal.path)"])
    }

    /// Deletes the files the journal no longer names, starts a runner for every journaled session and hands it the
    /// session's tasks; then deletes what the earlier run left in the staging directory (partial files were adopted
    /// by then).
    private func restoreSessions() {
        // Before any transfer starts: a download finishing meanwhile would be a file the journal does not name yet.
        sweepUnreferencedFiles()
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: paths.staging.path)) ?? []
        do {
            for (configuration, _) in try journal.sessionConfigurations() {
                let runner = makeRunner(configuration)
                runner.restore(try journal.tasks(session: configuration.identifier))
            }
        } catch {
            logger.error("journaled sessions not restored", metadata: ["error": "\(error)"])
        }
        for name in leftovers {
            try? FileManager.default.removeItem(at: paths.staging.appendingPathComponent(name))
        }
    }

    /// Deletes what an earlier run left behind when it was killed between a journal write and a file operation: a
    /// finished download or an upload copy the journal no longer names, a partial file no checkpoint names. Partial
    /// files younger than a week are kept: resume data an app holds may name them.
    private func sweepUnreferencedFiles() {
        guard let referenced = try? journal.referencedFiles() else {
            return
        }
        let weekAgo = Date().addingTimeInterval(-7 * 24 * 3600)
        var removed = 0
        for directory in [paths.downloads, paths.uploads, paths.partials] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names {
                let file = directory.appendingPathComponent(name)
                guard !referenced.contains(file.path) else {
                    continue
                }
                if directory == paths.partials {
                    let modified = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate]
                    guard let modified = modified as? Date, modified < weekAgo else {
                        continue
                    }
                }
                if (try? FileManager.default.removeItem(at: file)) != nil {
                    removed += 1
                }
            }
        }
        if removed > 0 {
            logger.info("removed files an earlier run left behind", metadata: ["count": "\(removed)"])
        }
    }

    @discardableResult
    private func makeRunner(_ configuration: IPCMessage.OpenSession) -> BackgroundSessionRunner {
        state.withLock { state in
            if let runner = state.runners[configuration.identifier] {
                runner.update(configuration)
                return runner
            }
            let runner = BackgroundSessionRunner(
                configuration: configuration,
                journal: journal,
                paths: paths,
                settings: settings,
                logger: logger,
                // Strong: the cycle (server → runner → closure → server) ends when `run()` drops the runners.
                undelivered: { [self] session, events in self.endedWhileAway(session, events) }
            )
            state.runners[configuration.identifier] = runner
            return runner
        }
    }

    /// A task of `session` ended while its app is not connected: a finished download is shown as a desktop
    /// notification (where there is a desktop), and the app is relaunched for its events. Called under the runner's
    /// delivery lock: the work (journal reads, spawning helpers) happens after it is released.
    private func endedWhileAway(_ session: String, _ events: [IPCMessage.SequencedEvent]) {
        DispatchQueue.global().async { [self] in
            self.notifyFinishedDownloads(session, events)
            self.wakeApp(of: session)
        }
    }

    /// One notification per download these events finished ("Downloaded <description>"), titled with the app.
    private func notifyFinishedDownloads(_ session: String, _ events: [IPCMessage.SequencedEvent]) {
        let finished = Set(events.compactMap { event -> Int? in
            if case .finishedDownloading = event.event { event.task } else { nil }
        })
        guard let notifier, !finished.isEmpty, let tasks = try? journal.tasks(session: session) else {
            return
        }
        let app = (try? journal.app(ofSession: session)) ?? session
        for task in tasks where finished.contains(task.identifier) {
            let name = task.spec.taskDescription ?? task.spec.request.url?.lastPathComponent ?? "a file"
            notifier.notify(summary: app, body: "Downloaded \(name)")
        }
    }

    /// Relaunches the app of `session` when its session asks for launch events and it registered a launch command.
    private func wakeApp(of session: String) {
        guard let runner = runner(session), runner.sendsLaunchEvents,
            let app = try? journal.app(ofSession: session),
            let command = try? journal.launchCommand(of: app), !command.isEmpty
        else {
            return
        }
        launcher.wake(app: app, session: session, command: command) { [self] in
            self.state.withLock { $0.sessionOwners[session] == nil }
        }
    }

    private func runner(_ session: String) -> BackgroundSessionRunner? {
        state.withLock { $0.runners[session] }
    }

    /// Accepts connections until ``stop()``; each gets a reader thread of its own. Removes the socket before it
    /// returns (on the caller's thread, so the process cannot exit before it is gone), then stops every session's
    /// transfers. Returns false when a transfer engine was not destroyed in time or a libuv loop closed with handles
    /// still open.
    package func run() -> Bool {
        while true {
            // accept4 is hidden by Glibc's module map (it needs _GNU_SOURCE): accept, then close-on-exec.
            let descriptor = accept(listener, nil, nil)
            if descriptor >= 0 {
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            }
            if descriptor < 0 {
                if errno == EINTR || errno == ECONNABORTED {
                    continue
                }
                break
            }
            let who = PeerCredentials.of(socket: descriptor)
            guard let peer = who, peer.isAdmitted(byDaemonOf: uid) else {
                logger.warning(
                    "refused a connection from another user",
                    metadata: ["uid": "\(who.map { String($0.uid) } ?? "unknown")", "pid": "\(who?.pid ?? 0)"]
                )
                close(descriptor)
                continue
            }
            let connection = Connection(descriptor: descriptor, pid: peer.pid)
            let admitted = state.withLock { state -> Bool in
                guard !state.stopping else {
                    return false
                }
                state.connections[descriptor] = connection
                return true
            }
            guard admitted else {
                close(descriptor)
                break
            }
            Thread.detachNewThread { [self] in
                self.serve(connection)
            }
        }
        unlink(paths.socket.path)
        backgroundWork.stop()
        pushEndpoint?.stop()
        for runner in state.withLock({ Array($0.runners.values) }) {
            runner.stop()
        }
        state.withLock { $0.runners = [:] }
        do {
            try journal.foldWriteAheadLog()
        } catch {
            logger.error("the journal's write-ahead log was not folded into it", metadata: ["error": "\(error)"])
        }
        let deadline = Date().addingTimeInterval(5)
        while EngineCensus.liveEngines > 0, Date() < deadline {
            usleep(10_000)
        }
        let clean = EngineCensus.liveEngines == 0 && EngineCensus.leakedLoops == 0
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
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        close(listener)
    }

    // MARK: One connection

    /// One connection's state, touched by its reader thread; writes are serialised by `writeLock`.
    ///
    /// `@unchecked Sendable`: `descriptor` and `pid` are constants; `app` and `inForeground` are read and written only
    /// on the connection's reader thread; sends hold `writeLock`.
    private final class Connection: @unchecked Sendable {
        let descriptor: Int32
        let pid: pid_t
        var app: String?
        /// The app's last word on where it stands (hello, then `appState`).
        var inForeground = true
        /// The hello's word on the foreground was heard (later ones are changes).
        var heardState = false
        /// Held while a frame is written; counts the frames. (Not `()`: TSan reports inout access to a zero-sized value
        /// as a race.)
        private let writeLock = LockedValue<UInt64>(0)

        init(descriptor: Int32, pid: pid_t) {
            self.descriptor = descriptor
            self.pid = pid
        }

        func send(_ message: IPCMessage) -> Bool {
            guard let frame = try? message.frame() else {
                return false
            }
            return writeLock.withLock { written in
                written += 1
                return UnixSocket.write(frame.encoded, to: descriptor)
            }
        }

        func shutDown() {
            Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
        }
    }

    private func serve(_ connection: Connection) {
        var decoder = IPCFrameDecoder()
        var reason = "the client closed the connection"
        reading: while true {
            let bytes = UnixSocket.read(from: connection.descriptor)
            do throws(IPCError) {
                if bytes.isEmpty {
                    try decoder.finish()
                    break reading
                }
                for frame in try decoder.feed(bytes) {
                    let message = try IPCMessage(frame: frame)
                    if let refusal = handle(message, on: connection) {
                        reason = refusal
                        break reading
                    }
                }
            } catch {
                reason = "protocol error: \(error)"
                _ = connection.send(.failure(.init(request: nil, error: CourierError(.unknown, "\(error)"))))
                break reading
            }
        }
        // Before the descriptor closes (it could be reused): no wake is written to it after this.
        backgroundWork.disconnected(connection.descriptor)
        let released = state.withLock { state -> [String] in
            state.connections[connection.descriptor] = nil
            let held = state.sessionOwners.filter { $0.value == connection.descriptor }.map(\.key)
            for session in held {
                state.sessionOwners[session] = nil
                state.runners[session]?.detach(owner: connection.descriptor)
            }
            close(connection.descriptor)
            return held
        }
        logger.info(
            "connection closed",
            metadata: [
                "pid": "\(connection.pid)", "app": "\(connection.app ?? "-")", "reason": "\(reason)",
                "sessions": "\(released.joined(separator: ","))",
            ]
        )
    }

    /// Answers one message; returns why the connection must close, or nil to go on.
    private func handle(_ message: IPCMessage, on connection: Connection) -> String? {
        guard let app = connection.app else {
            guard case .hello(let hello) = message else {
                return "the first message was \(message.kind), not hello"
            }
            connection.app = hello.app
            appState(.init(inForeground: hello.inForeground ?? true), on: connection)
            do {
                try journal.registerApp(hello.app, launchCommand: hello.launchCommand)
            } catch {
                logger.error("launch command not journaled", metadata: ["app": "\(hello.app)", "error": "\(error)"])
            }
            _ = connection.send(.welcome(.init(daemonVersion: DaemonServer.version)))
            return nil
        }
        switch message {
        case .hello:
            return "a second hello"
        case .openSession(let open):
            openSession(open, app: app, on: connection)
        case .listTasks(let list):
            reply(list.request, on: connection) { () throws(JournalError) in
                if let runner = runner(list.session) {
                    return .tasks(snapshots: try runner.snapshots())
                }
                return .tasks(snapshots: [])
            }
        case .acknowledge(let acknowledgement):
            acknowledge(acknowledgement)
        case .closeSession(let close):
            closeSession(close, on: connection)
        case .createTask(let create):
            createTask(create, on: connection)
        case .command(let command):
            // Any connection of this user may command a task (the app, or `courier cancel`).
            guard let runner = runner(command.session) else {
                let error = CourierError(.unknown, "no background session \(command.session)")
                _ = connection.send(.failure(.init(request: command.request, error: error)))
                break
            }
            if let error = runner.perform(command.verb, task: command.task) {
                _ = connection.send(.failure(.init(request: command.request, error: error)))
            } else {
                _ = connection.send(.reply(.init(request: command.request, result: .done)))
            }
        case .listSessions(let list):
            reply(list.request, on: connection) { () throws(JournalError) in
                .sessions(try sessionSummaries())
            }
        case .stopDaemon(let stop):
            logger.notice("asked to stop", metadata: ["app": "\(app)", "pid": "\(connection.pid)"])
            _ = connection.send(.reply(.init(request: stop.request, result: .done)))
            DispatchQueue.global().async { [self] in
                self.stop()
            }
        case .forceQuit(let quit):
            reply(quit.request, on: connection) { () throws(JournalError) in
                try journal.markForceQuit(quit.app)
                for session in try journal.sessions(ofApp: quit.app) {
                    runner(session)?.cancelAll(
                        reason: "the user force-quit \(quit.app)",
                        cancelledReason: .userForceQuitApplication
                    )
                }
                logger.notice("force-quit", metadata: ["app": "\(quit.app)"])
                return .done
            }
        case .appState(let state):
            appState(state, on: connection)
        case .registerApp(let registration):
            let answer = backgroundWork.register(
                registration,
                app: app,
                pid: connection.pid,
                connection: connection.descriptor,
                inForeground: connection.inForeground
            ) { message in
                // Strong: the service drops the link when the connection closes (`disconnected`, before the close).
                connection.send(message)
            }
            reply(registration.request, on: connection) { () throws(JournalError) in
                .registered(deviceToken: try answer.get())
            }
        case .wakeCompleted(let completed):
            backgroundWork.completed(completed, app: app)
        case .sendPush(let push):
            _ = connection.send(.reply(.init(request: push.request, result: .push(backgroundWork.push(push)))))
        case .listApps(let list):
            _ = connection.send(.reply(.init(request: list.request, result: .apps(backgroundWork.apps()))))
        case .triggerFetch(let trigger):
            if let error = backgroundWork.triggerFetch(trigger.app, launch: trigger.launch) {
                _ = connection.send(.failure(.init(request: trigger.request, error: error)))
            } else {
                _ = connection.send(.reply(.init(request: trigger.request, result: .done)))
            }
        case .welcome, .reply, .failure, .events, .wake:
            return "a \(message.kind) message is the daemon's to send"
        }
        return nil
    }

    /// The app moved between the foreground and the background: in the foreground, its relaunch delay resets
    /// (docs/background-model.md #8).
    private func appState(_ state: IPCMessage.AppState, on connection: Connection) {
        let cameToForeground = state.inForeground && !connection.inForeground
        connection.inForeground = state.inForeground
        if let app = connection.app {
            if state.inForeground {
                launcher.appCameToForeground(app)
            }
            backgroundWork.appState(
                app,
                connection: connection.descriptor,
                inForeground: state.inForeground,
                cameToForeground: state.inForeground && (cameToForeground || !connection.heardState)
            )
        }
        connection.heardState = true
    }

    private func openSession(_ open: IPCMessage.OpenSession, app: String, on connection: Connection) {
        let taken = state.withLock { state -> Bool in
            // A holder whose peer hung up (an app killed a moment ago, its connection not yet reaped) holds nothing.
            if let owner = state.sessionOwners[open.identifier], owner != connection.descriptor,
                !UnixSocket.peerHungUp(owner)
            {
                return true
            }
            state.sessionOwners[open.identifier] = connection.descriptor
            return false
        }
        guard !taken else {
            let error = CourierError(
                .backgroundSessionInUse,
                "a background session with identifier \(open.identifier) is already open"
            )
            _ = connection.send(.failure(.init(request: open.request, error: error)))
            return
        }
        let next: Int
        do {
            next = try journal.openSession(open, app: app)
        } catch {
            state.withLock { $0.sessionOwners[open.identifier] = nil }
            _ = connection.send(.failure(.init(request: open.request, error: CourierError(.unknown, "\(error)"))))
            return
        }
        // Events the app has not acknowledged (it died, was not running, or courierd restarted) are delivered again,
        // in order, before the answer: the app knows when the answer comes whether a replay (and so
        // `urlSessionDidFinishEvents`) is due. New ones follow as they happen.
        makeRunner(open).attach(owner: connection.descriptor) { events in
            connection.send(.events(events))
        }
        _ = connection.send(.reply(.init(request: open.request, result: .sessionOpened(nextTaskIdentifier: next))))
    }

    /// The runner of a session this connection opened, or nil after a failure was sent.
    private func ownedRunner(
        _ session: String,
        request: UInt64,
        on connection: Connection
    ) -> BackgroundSessionRunner? {
        let runner = state.withLock { state in
            state.sessionOwners[session] == connection.descriptor ? state.runners[session] : nil
        }
        if runner == nil {
            let error = CourierError(.sessionInvalidated, "the background session \(session) is not open on this connection")
            _ = connection.send(.failure(.init(request: request, error: error)))
        }
        return runner
    }

    /// Journals the task, answers, then starts it: when the app's `resume()` returns, the task is durable.
    private func createTask(_ create: IPCMessage.CreateTask, on connection: Connection) {
        guard let runner = ownedRunner(create.session, request: create.request, on: connection) else {
            return
        }
        var admitted: IPCMessage.BackgroundTask
        switch BackgroundTaskAdmission.admit(create.task, uploadsDirectory: paths.uploads) {
        case .success(let task):
            admitted = task
        case .failure(let error):
            _ = connection.send(.failure(.init(request: create.request, error: error)))
            return
        }
        let now = Date()
        // Created in the background: discretionary, and not started before the app's relaunch delay has passed
        // (docs/background-model.md #7, #8).
        if !connection.inForeground, let app = connection.app {
            admitted.createdInBackground = true
            let earliest = launcher.earliestWake(of: app, now: now)
            admitted.startAfter = earliest > now ? earliest : nil
        }
        do {
            try journal.insertTask(admitted, session: create.session, at: now)
        } catch {
            if let copy = admitted.uploadFile, admitted.kind == .upload {
                try? FileManager.default.removeItem(atPath: copy)
            }
            let code: CourierError.Code = if case .duplicateTask = error { .unsupportedInBackgroundSession } else { .unknown }
            _ = connection.send(.failure(.init(request: create.request, error: CourierError(code, "\(error)"))))
            return
        }
        _ = connection.send(.reply(.init(request: create.request, result: .taskCreated)))
        runner.add(
            JournaledTask(
                session: create.session,
                spec: admitted,
                state: .waiting,
                bytesOnDisk: 0,
                expectedLength: -1,
                createdAt: now
            )
        )
    }

    private func sessionSummaries() throws(JournalError) -> [IPCMessage.SessionSummary] {
        let owners = state.withLock { $0.sessionOwners }
        var summaries: [IPCMessage.SessionSummary] = []
        for (identifier, app) in try journal.sessions() {
            let activity = try journal.activity(session: identifier)
            summaries.append(
                IPCMessage.SessionSummary(
                    identifier: identifier,
                    app: app,
                    connected: owners[identifier] != nil,
                    activeTasks: activity.activeTasks,
                    pendingEvents: activity.pendingEvents
                )
            )
        }
        return summaries
    }

    /// Deletes the acknowledged events, the files they handed over and the tasks that have nothing left to say.
    private func acknowledge(_ acknowledgement: IPCMessage.Acknowledge) {
        do {
            let removed = try journal.acknowledge(session: acknowledgement.session, through: acknowledgement.through)
            for file in removed.files where file.hasPrefix(paths.downloads.path + "/") {
                try? FileManager.default.removeItem(atPath: file)
            }
        } catch {
            logger.error("acknowledgement not journaled", metadata: ["error": "\(error)"])
        }
    }

    private func closeSession(_ close: IPCMessage.CloseSession, on connection: Connection) {
        let runner = state.withLock { state -> BackgroundSessionRunner? in
            guard state.sessionOwners[close.session] == connection.descriptor else {
                return nil
            }
            state.sessionOwners[close.session] = nil
            return state.runners[close.session]
        }
        if close.cancelTasks {
            runner?.cancelAll()
        }
        runner?.detach(owner: connection.descriptor)
        _ = connection.send(.reply(.init(request: close.request, result: .done)))
    }

    private func reply(
        _ request: UInt64,
        on connection: Connection,
        _ result: () throws(JournalError) -> IPCMessage.Reply.Result
    ) {
        do {
            _ = connection.send(.reply(.init(request: request, result: try result())))
        } catch {
            _ = connection.send(.failure(.init(request: request, error: CourierError(.unknown, "\(error)"))))
        }
    }
}
