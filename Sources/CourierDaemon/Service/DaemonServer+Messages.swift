import Courier
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The conversation of `docs/ipc.md`, one message at a time, on the connection's reader queue.
extension DaemonServer {
    /// Answers the messages of one read in order, the `createTask` frames among them that follow each other as one
    /// (``createTasks(_:on:)``: one journal transaction), and acknowledgements that follow each other as the last of
    /// each session (one transaction and one flush, not one per batch the app heard); returns why the connection must
    /// close, or nil to go on.
    func handle(_ messages: [IPCMessage], on connection: ClientConnection) -> String? {
        var index = messages.startIndex
        while index < messages.endIndex {
            if connection.app != nil, case .createTask = messages[index] {
                var creates: [IPCMessage.CreateTask] = []
                while index < messages.endIndex, case .createTask(let create) = messages[index] {
                    creates.append(create)
                    index += 1
                }
                createTasks(creates, on: connection)
                continue
            }
            if connection.app != nil, case .acknowledge = messages[index] {
                var latest: [IPCMessage.Acknowledge] = []
                while index < messages.endIndex, case .acknowledge(let acknowledgement) = messages[index] {
                    if let same = latest.firstIndex(where: { $0.session == acknowledgement.session }) {
                        latest[same].through = max(latest[same].through, acknowledgement.through)
                    } else {
                        latest.append(acknowledgement)
                    }
                    index += 1
                }
                latest.forEach(acknowledge)
                continue
            }
            if let refusal = handle(messages[index], on: connection) {
                return refusal
            }
            index += 1
        }
        return nil
    }

    /// Answers one message; returns why the connection must close, or nil to go on.
    func handle(_ message: IPCMessage, on connection: ClientConnection) -> String? {
        guard let app = connection.app else {
            guard case .hello(let hello) = message else {
                return "the first message was \(message.kind), not hello"
            }
            connection.app = hello.app
            connection.appReads(hello.protocolVersion)
            appState(.init(inForeground: hello.inForeground ?? true), on: connection)
            do {
                try journal.registerApp(hello.app, launchCommand: hello.launchCommand)
            } catch {
                logger.error("launch command not journaled", metadata: ["app": "\(hello.app)", "error": "\(error)"])
            }
            var greeting = welcome
            greeting.figures = figures
            _ = connection.send(.welcome(greeting))
            return nil
        }
        switch message {
        case .hello:
            return "a second hello"
        case .openSession(let open):
            openSession(open, app: app, on: connection)
        case .listTasks(let list):
            reply(list.request, on: connection) { () throws(JournalError) in
                guard let runner = sessions.runner(list.session) else {
                    return .tasks(snapshots: [])
                }
                // The ended ones first (about Journal.historyLimit), then the journaled tasks by identifier.
                let ended = list.includesEnded == true ? try journal.history(session: list.session) : []
                guard let limit = list.limit.map({ max($0, 0) }) else {
                    return .tasks(snapshots: ended + (try runner.snapshots()))
                }
                let start = max(list.offset ?? 0, 0)
                var page = Array(ended.dropFirst(start).prefix(limit))
                if page.count < limit {
                    page += try runner.snapshots(offset: max(start - ended.count, 0), limit: limit - page.count)
                }
                return .tasks(snapshots: page)
            }
        case .acknowledge(let acknowledgement):
            acknowledge(acknowledgement)
        case .closeSession(let close):
            closeSession(close, on: connection)
        case .createTask(let create):
            createTasks([create], on: connection)
        case .command(let command):
            // Any connection of this user may command a task (the app, or `courier cancel`).
            guard let runner = sessions.runner(command.session) else {
                let error = CourierError(.unknown, "no background session \(command.session)")
                _ = connection.send(.failure(.init(request: command.request, error: error)))
                break
            }
            if let error = runner.perform(command.verb, task: command.task, newRequest: command.newRequest) {
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
                    sessions.runner(session)?.cancelAll(
                        reason: "the user force-quit \(quit.app)",
                        cancelledReason: .userForceQuitApplication
                    )
                }
                logger.notice("force-quit", metadata: ["app": "\(quit.app)"])
                reclaimSuspendedInstances(of: quit.app)
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
            } continueIfSuspended: {
                connection.continueIfSuspended()
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
    /// (docs/background-model.md #8). Its lifecycle is stopping the process (suspended): what courierd wrote to it
    /// that it has not read continues it once it is stopped, and an idle instance's wait for its reclaim starts.
    func appState(_ state: IPCMessage.AppState, on connection: ClientConnection) {
        let cameToForeground = state.inForeground && !connection.inForeground
        connection.inForeground = state.inForeground
        if let suspended = state.suspended, connection.saySuspended(suspended), !state.inForeground {
            // Written (or queued) while it was suspending: it would wait unread until something else continued it.
            // (Each of the app's connections says so, and looks at its own; nothing unread, nothing is sent.)
            connection.continueIfSuspended()
            scheduleIdleReclaim(of: connection.pid)
        }
        if let app = connection.app {
            instances.note(
                pid: connection.pid,
                descriptor: connection.descriptor,
                app: app,
                inBackground: !state.inForeground
            )
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

    func openSession(_ open: IPCMessage.OpenSession, app: String, on connection: ClientConnection) {
        awaitGoneHolder(of: open.identifier, for: connection)
        let claimed =
            sessions.claim(open.identifier, for: connection.descriptor)
            || (reclaimSuspendedHolder(of: open.identifier, for: app)
                && sessions.claim(open.identifier, for: connection.descriptor))
        guard claimed else {
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
            sessions.release(open.identifier, by: connection.descriptor)
            _ = connection.send(.failure(.init(request: open.request, error: error.courierError)))
            return
        }
        // Events the app has not acknowledged (it died, was not running, or courierd restarted) are delivered again,
        // in order, before the answer: the app knows when the answer comes whether a replay (and so
        // `urlSessionDidFinishEvents`) is due. New ones follow as they happen.
        makeRunner(open).attach(owner: connection.descriptor) { events in
            let delivery: BackgroundSessionRunner.EventDelivery =
                switch connection.offer(events) {
                case .queued: .queued
                case .withheld: .withheld
                case .closed: .gone
                }
            // A suspended instance (in the background, stopped) is continued for its session's events, as for a fetch
            // or a push: the events are queued for its socket first, so it knows courierd woke it, and suspends itself
            // once they are delivered. (A foreground app is not looked at: one its user stopped stays stopped.)
            if delivery != .gone {
                connection.continueIfSuspended()
            }
            return delivery
        }
        _ = connection.send(.reply(.init(request: open.request, result: .sessionOpened(nextTaskIdentifier: next))))
    }

    /// When the session is held by a connection whose app is gone (its peer hung up: killed, or its session abandoned
    /// a moment ago), waits (at most ``reclaimGrace``) for that connection's last frames to be handled and the
    /// connection to end: a task it created just before (its `createTask` written, not yet read) is then journaled
    /// before the session changes hands, instead of being refused on a connection that no longer holds it.
    private func awaitGoneHolder(of session: String, for connection: ClientConnection) {
        guard let descriptor = sessions.holder(of: session), descriptor != connection.descriptor,
            UnixSocket.peerHungUp(descriptor),
            let holder = state.withLock({ $0.connections[descriptor] })
        else {
            return
        }
        state.wait(atMost: Self.reclaimGrace) { $0.connections[descriptor] !== holder }
    }

    /// The runner of a session this connection opened, or nil after a failure was sent.
    func ownedRunner(
        _ session: String,
        request: UInt64,
        on connection: ClientConnection
    ) -> BackgroundSessionRunner? {
        let runner = sessions.runner(session, heldBy: connection.descriptor)
        if runner == nil {
            let error = CourierError(.sessionInvalidated, "the background session \(session) is not open on this connection")
            _ = connection.send(.failure(.init(request: request, error: error)))
        }
        return runner
    }

    /// The `createTask` frames of one read, as one: each admitted, all journaled in one transaction, then each
    /// given to its runner and answered. When the app hears a task exists, it is journaled (and on disk: the answer
    /// is written after the next group commit).
    func createTasks(_ creates: [IPCMessage.CreateTask], on connection: ClientConnection) {
        struct Admitted {
            var create: IPCMessage.CreateTask
            var runner: BackgroundSessionRunner
            var task: IPCMessage.BackgroundTask
        }
        let now = Date()
        var admitted: [Admitted] = []
        admitted.reserveCapacity(creates.count)
        for create in creates {
            guard let runner = ownedRunner(create.session, request: create.request, on: connection) else {
                continue
            }
            switch BackgroundTaskAdmission.admit(create.task, uploadsDirectory: paths.uploads) {
            case .success(var task):
                // Created in the background: discretionary, and not started before the app's relaunch delay has
                // passed (docs/background-model.md #7, #8).
                if !connection.inForeground, let app = connection.app {
                    task.createdInBackground = true
                    let earliest = launcher.earliestWake(of: app, now: now)
                    task.startAfter = earliest > now ? earliest : nil
                }
                admitted.append(Admitted(create: create, runner: runner, task: task))
            case .failure(let error):
                _ = connection.send(.failure(.init(request: create.request, error: error)))
            }
        }
        guard !admitted.isEmpty else {
            return
        }
        let refusals: [JournalError?]
        do {
            let records = admitted.map { Journal.NewTask(task: $0.task, session: $0.create.session) }
            refusals = try journal.insertTasks(records, at: now)
        } catch {
            refusals = Array(repeating: error, count: admitted.count)
        }
        for (entry, refusal) in zip(admitted, refusals) {
            if let refusal {
                if let copy = entry.task.uploadFile, entry.task.kind == .upload {
                    try? FileManager.default.removeItem(atPath: copy)
                }
                var error = refusal.courierError
                if case .duplicateTask = refusal {
                    error.code = .unsupportedInBackgroundSession
                }
                _ = connection.send(.failure(.init(request: entry.create.request, error: error)))
                continue
            }
            // The runner has the task before the app hears it exists: a command another connection sends once it
            // does (`courier kill`, `courier cancel`, the app's force-quit) finds it. Its first events may precede the
            // answer (the app binds the task before it asks).
            entry.runner.add(
                JournaledTask(
                    session: entry.create.session,
                    spec: entry.task,
                    state: .waiting,
                    bytesOnDisk: 0,
                    expectedLength: -1,
                    createdAt: now
                )
            )
            _ = connection.send(.reply(.init(request: entry.create.request, result: .taskCreated)))
        }
    }

    func sessionSummaries() throws(JournalError) -> [IPCMessage.SessionSummary] {
        let held = sessions.heldSessions
        var summaries: [IPCMessage.SessionSummary] = []
        for (identifier, app) in try journal.sessions() {
            let activity = try journal.activity(session: identifier)
            summaries.append(
                IPCMessage.SessionSummary(
                    identifier: identifier,
                    app: app,
                    connected: held.contains(identifier),
                    activeTasks: activity.activeTasks,
                    pendingEvents: activity.pendingEvents
                )
            )
        }
        return summaries
    }

    /// Deletes the acknowledged events, the files they handed over and the tasks that have nothing left to say.
    func acknowledge(_ acknowledgement: IPCMessage.Acknowledge) {
        do {
            let removed = try journal.acknowledge(session: acknowledgement.session, through: acknowledgement.through)
            // Deleted once the acknowledgement is on disk: a power cut before would replay events naming them.
            journal.sync()
            for file in removed.files where file.hasPrefix(paths.downloads.path + "/") {
                FileManager.default.removeFile(at: URL(fileURLWithPath: file))
            }
        } catch {
            logger.error("acknowledgement not journaled", metadata: ["error": "\(error)"])
        }
    }

    func closeSession(_ close: IPCMessage.CloseSession, on connection: ClientConnection) {
        let runner = sessions.release(close.session, by: connection.descriptor)
        if close.cancelTasks {
            runner?.cancelAll()
        }
        runner?.detach(owner: connection.descriptor)
        _ = connection.send(.reply(.init(request: close.request, result: .done)))
    }

    func reply(
        _ request: UInt64,
        on connection: ClientConnection,
        _ result: () throws(JournalError) -> IPCMessage.Reply.Result
    ) {
        do {
            guard connection.send(.reply(.init(request: request, result: try result()))) else {
                // Too large for one frame (a whole task list asked for by an older client): said, not left unanswered.
                let error = CourierError(.unknown, "the answer does not fit in one frame; ask for the list in pages")
                _ = connection.send(.failure(.init(request: request, error: error)))
                return
            }
        } catch {
            _ = connection.send(.failure(.init(request: request, error: error.courierError)))
        }
    }
}

extension DaemonServer {
    /// What courierd did since it started and what its sessions hold now (``DaemonFigures``).
    var figures: DaemonFigures {
        var figures = settings.counters.snapshot
        for runner in sessions.runners {
            figures.tasks.merge(runner.tasksByState, uniquingKeysWith: +)
        }
        (figures.runningTransfers, figures.waitingTransfers) = settings.slots.counts
        return figures
    }
}
