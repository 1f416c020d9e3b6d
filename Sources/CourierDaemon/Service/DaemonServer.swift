import Courier
import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// courierd's front door: the socket under the runtime directory, one reader thread per connection, the peer check
/// before the first byte is read, and the IPC conversation of `docs/ipc.md` over the journal.
///
/// Sessions, task listings and event acknowledgement are served from the journal. Transfers are not run by this
/// build yet: `createTask` and `command` are refused with `unsupportedInBackgroundSession`, so no task is accepted
/// that nothing would run.
///
/// `@unchecked Sendable`: `listener` is written once in `init`; everything that changes is in `state`, a lock.
package final class DaemonServer: @unchecked Sendable {
    package static let version = "0.1"

    private struct State {
        var stopping = false
        var connections: [Int32: Connection] = [:]
        /// Which connection holds each open session (one live session per identifier).
        var sessionOwners: [String: Int32] = [:]
    }

    private let paths: DaemonPaths
    private let journal: Journal
    private let logger: Logger
    private let uid: uid_t
    private let listener: Int32
    private let instance: InstanceLock
    private let state = LockedValue(State())

    /// Prepares the directories, takes the one-per-user lock, opens the journal and listens. Throws
    /// ``DaemonSetupError/alreadyRunning(lockFile:)`` when another courierd holds the lock.
    package init(paths: DaemonPaths, logger: Logger, uid: uid_t = getuid()) throws(DaemonSetupError) {
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
        self.uid = uid
        logger.info("listening", metadata: ["socket": "\(paths.socket.path)", "journal": "\(paths.journal.path)"])
    }

    /// Accepts connections until ``stop()``; each gets a reader thread of its own. Removes the socket before it
    /// returns (on the caller's thread, so the process cannot exit before it is gone).
    package func run() {
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
        logger.info("stopped")
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
    /// `@unchecked Sendable`: `descriptor` and `pid` are constants; `app` is read and written only on the
    /// connection's reader thread; sends hold `writeLock`.
    private final class Connection: @unchecked Sendable {
        let descriptor: Int32
        let pid: pid_t
        var app: String?
        private let writeLock = LockedValue(())

        init(descriptor: Int32, pid: pid_t) {
            self.descriptor = descriptor
            self.pid = pid
        }

        func send(_ message: IPCMessage) -> Bool {
            guard let frame = try? message.frame() else {
                return false
            }
            return writeLock.withLock { _ in UnixSocket.write(frame.encoded, to: descriptor) }
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
        let released = state.withLock { state -> [String] in
            state.connections[connection.descriptor] = nil
            let held = state.sessionOwners.filter { $0.value == connection.descriptor }.map(\.key)
            for session in held {
                state.sessionOwners[session] = nil
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
                .tasks(snapshots: try journal.tasks(session: list.session).map(DaemonServer.snapshot))
            }
        case .acknowledge(let acknowledgement):
            do {
                try journal.acknowledge(session: acknowledgement.session, through: acknowledgement.through)
            } catch {
                logger.error("acknowledgement not journaled", metadata: ["error": "\(error)"])
            }
        case .closeSession(let close):
            state.withLock { state in
                if state.sessionOwners[close.session] == connection.descriptor {
                    state.sessionOwners[close.session] = nil
                }
            }
            reply(close.request, on: connection) { () throws(JournalError) in
                if close.cancelTasks {
                    for task in try journal.tasks(session: close.session) {
                        try journal.removeTask(session: close.session, task: task.identifier)
                    }
                }
                return .done
            }
        case .createTask(let create):
            refuseTransfers(create.request, on: connection)
        case .command(let command):
            refuseTransfers(command.request, on: connection)
        case .welcome, .reply, .failure, .events:
            return "a \(message.kind) message is the daemon's to send"
        }
        return nil
    }

    private func openSession(_ open: IPCMessage.OpenSession, app: String, on connection: Connection) {
        let taken = state.withLock { state -> Bool in
            if let owner = state.sessionOwners[open.identifier], owner != connection.descriptor {
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
        reply(open.request, on: connection) { () throws(JournalError) in
            .sessionOpened(nextTaskIdentifier: try journal.openSession(open, app: app))
        }
        // Events the app has not acknowledged (it died, or was not running): delivered again, in order.
        if let pending = try? journal.pendingEvents(session: open.identifier), !pending.isEmpty {
            _ = connection.send(.events(.init(session: open.identifier, events: pending, finished: true)))
        }
    }

    private func refuseTransfers(_ request: UInt64, on connection: Connection) {
        let error = CourierError(
            .unsupportedInBackgroundSession,
            "this courierd (\(DaemonServer.version)) does not run background transfers yet"
        )
        _ = connection.send(.failure(.init(request: request, error: error)))
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

    private static func snapshot(_ task: JournaledTask) -> IPCMessage.TaskSnapshot {
        let state: SessionTask.State
        switch task.state {
        case .waiting, .suspended: state = .suspended
        case .running: state = .running
        case .completed: state = .completed
        }
        return IPCMessage.TaskSnapshot(
            identifier: task.identifier,
            taskDescription: task.spec.taskDescription,
            state: state.rawValue,
            countOfBytesReceived: task.bytesOnDisk,
            countOfBytesExpectedToReceive: task.expectedLength
        )
    }
}
