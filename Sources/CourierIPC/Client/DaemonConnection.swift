import CourierConcurrency
package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An app's connection to courierd (`docs/ipc.md`): requests answered in order of their replies, and the events the
/// daemon pushes, handed to one handler on the connection's reader thread.
///
/// Events that arrive before ``setEventHandler(_:)`` are kept and handed over then, in order. Frames are written
/// whole, one at a time, from any thread. When the connection ends (courierd went away, or ``close()``), the handler
/// of ``setEndHandler(_:)`` is called once, on the reader thread, after every waiting request has failed.
package final class DaemonConnection: Sendable {
    package typealias EventHandler = @Sendable (IPCMessage.Events) -> Void
    package typealias WakeHandler = @Sendable (IPCMessage.Wake) -> Void
    package typealias EndHandler = @Sendable () -> Void

    package typealias AnswerHandler = @Sendable (Result<IPCMessage.Reply.Result, CourierError>) -> Void

    /// A request waiting for its answer: a thread blocked in ``request(timeout:_:)``, or a handler of
    /// ``send(request:onAnswer:)``.
    private final class Waiter: Sendable {
        let done = DispatchSemaphore(value: 0)
        let answer = LockedValue<Result<IPCMessage.Reply.Result, CourierError>?>(nil)
        let handler: AnswerHandler?

        init(handler: AnswerHandler? = nil) {
            self.handler = handler
        }

        func answer(_ result: Result<IPCMessage.Reply.Result, CourierError>) {
            if let handler {
                handler(result)
            } else {
                answer.withLock { $0 = result }
                done.signal()
            }
        }
    }

    private struct State {
        var nextRequest: UInt64 = 1
        var waiting: [UInt64: Waiter] = [:]
        var handler: EventHandler?
        var early: [IPCMessage.Events] = []
        var wakeHandler: WakeHandler?
        var earlyWakes: [IPCMessage.Wake] = []
        var endHandler: EndHandler?
        /// Why the connection ended, once it did.
        var ended: CourierError?
        var welcome: IPCMessage.Welcome?
        /// The version frames are written in: JSON until courierd's `welcome` says it reads the record format.
        var writeVersion = IPCFrame.jsonVersion
    }

    private let descriptor: Int32
    private let state = LockedValue(State())
    /// Held while a frame is written (requests, acknowledgements and app-state changes come from different threads,
    /// and a frame must reach the socket whole); true once the descriptor is closed, so that no write can reach a
    /// descriptor number the process has reused since.
    private let writeLock = LockedValue(false)
    /// Signalled once the reader has ended the connection (and again by each waiter, for the next).
    private let readerEnded = DispatchSemaphore(value: 0)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// The name this process goes by with courierd: `$COURIER_APP`, else the process name.
    package static var appName: String {
        ProcessInfo.processInfo.environment["COURIER_APP"] ?? ProcessInfo.processInfo.processName
    }

    /// Connects to courierd at `paths` (starting it when none answers, unless `startingDaemon` is false), says hello,
    /// and starts reading.
    package static func open(
        paths: DaemonPaths,
        app: String,
        launchCommand: [String]? = nil,
        startingDaemon: Bool = true
    ) -> Result<DaemonConnection, CourierError> {
        let descriptor: Int32
        if let connected = UnixSocket.connect(to: paths.socket.path) {
            descriptor = connected
        } else if !startingDaemon {
            return .failure(
                CourierError(
                    .backgroundSessionWasDisconnected,
                    "courierd is not running (no answer at \(paths.socket.path))"
                )
            )
        } else {
            switch DaemonLauncher.start(paths) {
            case .success(let connected): descriptor = connected
            case .failure(let error): return .failure(error)
            }
        }
        let inForeground = ApplicationPresence.isInForeground
        let hello = IPCMessage.hello(
            .init(app: app, pid: getpid(), launchCommand: launchCommand, inForeground: inForeground)
        )
        guard let frame = try? hello.frame(), UnixSocket.write(frame.encoded, to: descriptor) else {
            // A courierd that accepted (its backlog did) and then ended: stopped or killed just then. The same as a
            // connection lost later, so that a session's opening tries again instead of failing its tasks.
            Glibc.close(descriptor)
            return .failure(CourierError(.networkConnectionLost, "courierd closed the connection at hello"))
        }
        let connection = DaemonConnection(descriptor: descriptor)
        // Later moves between the foreground and the background, and the process's suspensions, until the connection
        // ends (written on the transition's thread: a suspension's is sent before the process stops); one made since
        // the hello was written is sent at once.
        let presence = ApplicationPresence.addObserver { presence in
            connection.send(.appState(.init(inForeground: presence.inForeground, suspended: presence.suspended)))
        }
        let now = ApplicationPresence.current
        if now.inForeground != inForeground || now.suspended {
            connection.send(.appState(.init(inForeground: now.inForeground, suspended: now.suspended)))
        }
        DaemonConnections.opened(connection)
        Thread.detachNewThread {
            connection.read()
            ApplicationPresence.removeObserver(presence)
            DaemonConnections.ended(connection)
        }
        return .success(connection)
    }

    /// courierd's `welcome`: which courierd answered. Arrives before the answer to any request.
    package var welcome: IPCMessage.Welcome? {
        state.withLock { $0.welcome }
    }

    /// Sends a request and waits for its reply (or failure); `make` gets the request number.
    package func request(
        timeout: TimeInterval = 30,
        _ make: (UInt64) -> IPCMessage
    ) -> Result<IPCMessage.Reply.Result, CourierError> {
        let waiter = Waiter()
        let prepared = state.withLock { state -> Result<UInt64, CourierError> in
            if let ended = state.ended {
                return .failure(ended)
            }
            let number = state.nextRequest
            state.nextRequest += 1
            state.waiting[number] = waiter
            return .success(number)
        }
        let number: UInt64
        switch prepared {
        case .success(let value): number = value
        case .failure(let error): return .failure(error)
        }
        guard send(make(number)) else {
            state.withLock { _ = $0.waiting.removeValue(forKey: number) }
            // The write failing can come before the reader sees the end: ended once this returns, so that the caller
            // can tell a connection that went away (and make another) from a refusal.
            close()
            readerEnded.wait()
            readerEnded.signal()
            return .failure(CourierError(.networkConnectionLost, "courierd closed the connection"))
        }
        guard waiter.done.wait(timeout: .now() + timeout) == .success else {
            state.withLock { _ = $0.waiting.removeValue(forKey: number) }
            return .failure(CourierError(.timedOut, "courierd did not answer within \(Int(timeout)) s"))
        }
        return waiter.answer.withLock { $0 } ?? .failure(CourierError(.unknown, "no answer"))
    }

    /// Sends a request without waiting for its answer: returns once the frame is written (false, and `onAnswer` is
    /// never called, when it could not be: the connection is gone). `onAnswer` is called once, on the reader thread,
    /// with the reply or failure, or with the end of the connection when it ends first.
    @discardableResult
    package func send(request make: (UInt64) -> IPCMessage, onAnswer: @escaping AnswerHandler) -> Bool {
        let waiter = Waiter(handler: onAnswer)
        let number = state.withLock { state -> UInt64? in
            guard state.ended == nil else {
                return nil
            }
            defer { state.nextRequest += 1 }
            state.waiting[state.nextRequest] = waiter
            return state.nextRequest
        }
        guard let number else {
            return false
        }
        guard send(make(number)) else {
            // The reader may have failed it already at the end; else it never will.
            return state.withLock { $0.waiting.removeValue(forKey: number) } == nil
        }
        return true
    }

    /// Sends a message that has no reply (an acknowledgement). False when the connection is gone.
    @discardableResult
    package func send(_ message: IPCMessage) -> Bool {
        guard let frame = try? message.frame(version: state.withLock { $0.writeVersion }) else {
            return false
        }
        return writeLock.withLock { closed in
            !closed && UnixSocket.write(frame.encoded, to: descriptor)
        }
    }

    /// Calls `handler` once when the connection ends (at once if it has ended already).
    package func setEndHandler(_ handler: @escaping EndHandler) {
        let endedAlready = state.withLock { state -> Bool in
            guard state.ended == nil else {
                return true
            }
            state.endHandler = handler
            return false
        }
        if endedAlready {
            handler()
        }
    }

    /// Whether courierd's replay of a session's unacknowledged events (the batch marked `finished`, sent when the
    /// session is opened) arrived and waits for ``setEventHandler(_:)``.
    package var holdsReplay: Bool {
        state.withLock { state in state.early.contains { $0.finished } }
    }

    /// Hands events to `handler` from now on, the ones that came earlier first.
    package func setEventHandler(_ handler: @escaping EventHandler) {
        while true {
            let early = state.withLock { state -> [IPCMessage.Events] in
                let early = state.early
                state.early = []
                if early.isEmpty {
                    state.handler = handler
                }
                return early
            }
            if early.isEmpty {
                return
            }
            early.forEach(handler)
        }
    }

    /// Hands wakes (background work courierd asks for) to `handler` from now on, the ones that came earlier first.
    package func setWakeHandler(_ handler: @escaping WakeHandler) {
        let early = state.withLock { state -> [IPCMessage.Wake] in
            defer { state.earlyWakes = [] }
            state.wakeHandler = handler
            return state.earlyWakes
        }
        early.forEach(handler)
    }

    /// Whether courierd wrote bytes not read yet.
    package var hasUnreadBytes: Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }

    /// Who is at the other end (courierd's process), as the kernel says.
    package var peer: PeerCredentials? {
        PeerCredentials.of(socket: descriptor)
    }

    /// Whether the connection ended (courierd closed it, or it was closed).
    package var hasEnded: Bool {
        state.withLock { $0.ended != nil }
    }

    /// Ends the connection; the daemon treats it as the app going away (its sessions are released). Nothing once the
    /// descriptor is closed: its number may belong to another file of the process by now.
    package func close() {
        writeLock.withLock { closed in
            if !closed {
                shutdown(descriptor, Int32(SHUT_RDWR))
            }
        }
    }

    private func read() {
        var decoder = IPCFrameDecoder()
        var reason = CourierError(.networkConnectionLost, "courierd closed the connection")
        reading: while true {
            let bytes = UnixSocket.read(from: descriptor)
            if bytes.isEmpty {
                break
            }
            // Counted as soon as the read returns (a continued process tells courierd's SIGCONT by it).
            DaemonConnections.received(bytes.count)
            do throws(IPCError) {
                for frame in try decoder.feed(bytes) {
                    deliver(try IPCMessage(frame: frame))
                }
            } catch {
                reason = CourierError(.badServerResponse, "courierd sent a bad frame: \(error)")
                break reading
            }
        }
        let (waiters, endHandler) = state.withLock { state -> ([Waiter], EndHandler?) in
            state.ended = reason
            defer {
                state.waiting = [:]
                state.endHandler = nil
            }
            return (Array(state.waiting.values), state.endHandler)
        }
        readerEnded.signal()
        for waiter in waiters {
            waiter.answer(.failure(reason))
        }
        writeLock.withLock { closed in
            closed = true
            Glibc.close(descriptor)
        }
        endHandler?()
    }

    private func deliver(_ message: IPCMessage) {
        switch message {
        case .reply(let reply):
            answer(reply.request, .success(reply.result))
        case .failure(let failure):
            if let request = failure.request {
                answer(request, .failure(failure.error))
            }
        case .events(let events):
            let handler = state.withLock { state -> EventHandler? in
                if state.handler == nil {
                    state.early.append(events)
                }
                return state.handler
            }
            handler?(events)
        case .wake(let wake):
            let handler = state.withLock { state -> WakeHandler? in
                if state.wakeHandler == nil {
                    state.earlyWakes.append(wake)
                }
                return state.wakeHandler
            }
            handler?(wake)
        case .welcome(let welcome):
            state.withLock { state in
                state.welcome = welcome
                state.writeVersion = IPCFrame.version(toWriteFor: welcome.protocolVersion)
            }
        case .hello, .openSession, .createTask, .command, .listTasks, .acknowledge, .closeSession,
            .listSessions, .stopDaemon, .forceQuit, .appState, .registerApp, .wakeCompleted, .sendPush, .listApps,
            .triggerFetch:
            break
        }
    }

    private func answer(_ request: UInt64, _ result: Result<IPCMessage.Reply.Result, CourierError>) {
        guard let waiter = state.withLock({ $0.waiting.removeValue(forKey: request) }) else {
            return
        }
        waiter.answer(result)
    }
}
