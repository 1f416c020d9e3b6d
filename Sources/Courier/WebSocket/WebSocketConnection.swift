import CourierConcurrency
import Foundation

/// The state of one WebSocket task's connection: the frames read from the server's bytes, the messages waiting for
/// `receive`, the frames written into the upgraded exchange's body (the engine's streamed body), the close
/// handshake. Driven by the task's deliveries (the 101 response, the server's bytes), by its public methods, and by
/// the engine's `sent` count (``BodySupplier``); it acts on its task through inputs (``TaskInput/upgradeEnded``,
/// backpressure) and on the engine through ``TransferBackend/supply(_:_:end:)``.
final class WebSocketConnection: BodySupplier {
    /// Bytes of received messages kept for `receive` before the task stops reading the socket.
    static let inboxLimit = 4 << 20
    /// How long `cancel(with:reason:)` waits for the server's Close.
    static let closeTimeout: TimeInterval = 10

    enum Phase {
        case connecting
        case open
        /// Our Close went out (or is queued); waiting for the server's.
        case closing
        case closed
    }

    typealias Receiver = @Sendable (Result<WebSocketTask.Message, any Error>) -> Void
    typealias Completion = @Sendable ((any Error)?) -> Void

    private struct State {
        var phase = Phase.connecting
        var maximumMessageSize = 1 << 20
        var parser = WebSocketFrameParser(maximumPayload: 1 << 20)
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        var hop = 0
        var transfer: UInt64 = 0
        var backend: (any TransferBackend)?
        /// Frames written before the handshake completed, with their completions.
        var queued: [(Data, Completion?)] = []
        /// Bytes supplied to the transfer so far, and the sends waiting for the engine to take them (by end offset).
        var supplied: Int64 = 0
        var taken: Int64 = 0
        var sends: [(end: Int64, completion: Completion)] = []
        var inbox: [WebSocketTask.Message] = []
        var inboxStart = 0
        var inboxBytes = 0
        var paused = false
        var receivers: [Receiver] = []
        var pings: [(payload: Data, handler: Completion)] = []
        var nextPing: UInt32 = 0
        var closeCode = WebSocketTask.CloseCode.invalid
        var closeReason: Data?
        var closeReceived = false
        /// End the exchange once the engine took this many bytes (our last frame, a Close).
        var endWhenTaken: Int64?
        var failure: (any Error)?
    }

    private let state = LockedValue(State())
    let handshake: WebSocketHandshake

    init(handshake: WebSocketHandshake) {
        self.handshake = handshake
    }

    var hop: Int {
        state.withLock { $0.hop }
    }

    let bodyOffset: Int64 = 0

    var maximumMessageSize: Int {
        get { state.withLock { $0.maximumMessageSize } }
        set {
            state.withLock { state in
                state.maximumMessageSize = newValue
                state.parser.maximumPayload = newValue
                state.assembler.maximumMessageSize = newValue
            }
        }
    }

    var closeCode: WebSocketTask.CloseCode {
        state.withLock { $0.closeCode }
    }

    var closeReason: Data? {
        state.withLock { $0.closeReason }
    }

    // MARK: The handshake

    /// The final response of hop `hop` arrived: a 101 that answers the handshake opens the connection (the frames
    /// written before go out, the delegate hears `didOpenWithProtocol`); anything else fails the task.
    func responded(_ response: TaskResponse, task: WebSocketTask, work: inout DelegateWork) {
        let (hop, transfer) = task.storage.withLock { ($0.hop, $0.transfer) }
        let chosen: String?
        switch handshake.check(response.head) {
        case .failure(let error):
            task.send(.heldFailed(hop: hop, error), work: &work)
            return
        case .success(let subprotocol):
            chosen = subprotocol
        }
        guard let backend = task.core.runningBackend else {
            return
        }
        task.storage.withLock { $0.bodySupplier = self }
        // The frames written meanwhile go first, under the same lock that opens: a send racing the open comes after.
        let refused = state.withLock { state -> [(Completion?, any Error)] in
            guard state.phase == .connecting else {
                return []
            }
            state.phase = .open
            state.hop = hop
            state.transfer = transfer
            state.backend = backend
            defer { state.queued = [] }
            return state.queued.compactMap { frame, completion in
                Self.supply(frame, completion: completion, in: &state).map { (completion, $0) }
            }
        }
        for (completion, error) in refused {
            completion?(error)
        }
        work.append { session in
            guard let session, let delegate = task.delegate(as: (any SessionWebSocketDelegate).self) else {
                return
            }
            delegate.urlSession(session, webSocketTask: task, didOpenWithProtocol: chosen)
        }
    }

    // MARK: Receiving

    /// Bytes from the server.
    func received(_ bytes: Data, task: WebSocketTask, work: inout DelegateWork) {
        var events: [WebSocketMessageAssembler.Event] = []
        var violation: WebSocketViolation?
        state.withLock { state in
            guard state.phase == .open || state.phase == .closing else {
                return
            }
            do throws(WebSocketViolation) {
                for frame in try state.parser.feed(bytes) {
                    if let event = try state.assembler.take(frame) {
                        events.append(event)
                    }
                }
            } catch {
                violation = error
            }
        }
        for event in events {
            switch event {
            case .text(let text):
                deliver(.string(text), task: task, work: &work)
            case .binary(let data):
                deliver(.data(data), task: task, work: &work)
            case .ping(let payload):
                write(Self.frame(.pong, payload), completion: nil)
            case .pong(let payload):
                let handler = state.withLock { state -> Completion? in
                    guard let index = state.pings.firstIndex(where: { $0.payload == payload }) else {
                        return nil
                    }
                    return state.pings.remove(at: index).handler
                }
                handler?(nil)
            case .close(let code, let reason):
                closeArrived(code: code, reason: reason, task: task, work: &work)
            }
        }
        if let violation {
            fail(violation, task: task, work: &work)
        }
    }

    private func deliver(_ message: WebSocketTask.Message, task: WebSocketTask, work: inout DelegateWork) {
        let (receiver, pause) = state.withLock { state -> (Receiver?, Bool) in
            if !state.receivers.isEmpty {
                return (state.receivers.removeFirst(), false)
            }
            state.inbox.append(message)
            state.inboxBytes += Self.size(of: message)
            guard !state.paused, state.inboxBytes > max(Self.inboxLimit, state.maximumMessageSize) else {
                return (nil, false)
            }
            state.paused = true
            return (nil, true)
        }
        receiver?(.success(message))
        if pause {
            task.send(.backpressure(true), work: &work)
        }
    }

    func receive(for task: WebSocketTask, _ receiver: @escaping Receiver) {
        let (result, resume) = state.withLock { state -> (Result<WebSocketTask.Message, any Error>?, Bool) in
            if state.inboxStart < state.inbox.count {
                let message = state.inbox[state.inboxStart]
                state.inboxStart += 1
                state.inboxBytes -= Self.size(of: message)
                if state.inboxStart == state.inbox.count {
                    state.inbox = []
                    state.inboxStart = 0
                }
                let resume = state.paused && state.inboxBytes <= max(Self.inboxLimit, state.maximumMessageSize) / 2
                if resume {
                    state.paused = false
                }
                return (.success(message), resume)
            }
            if let failure = state.failure ?? (state.phase == .closed ? Self.closedError(state) : nil) {
                return (.failure(failure), false)
            }
            state.receivers.append(receiver)
            return (nil, false)
        }
        if resume {
            task.setBackpressure(paused: false)
        }
        if let result {
            receiver(result)
        }
    }

    // MARK: Sending

    func send(_ message: WebSocketTask.Message, for task: WebSocketTask, completion: @escaping Completion) {
        let frame: Data
        switch message {
        case .data(let data): frame = Self.frame(.binary, data)
        case .string(let text): frame = Self.frame(.text, Data(text.utf8))
        }
        enqueueOrWrite(frame, completion: completion)
    }

    func sendPing(for task: WebSocketTask, _ handler: @escaping Completion) {
        let payload = state.withLock { state -> Data? in
            guard state.failure == nil, state.phase != .closed else {
                return nil
            }
            state.nextPing &+= 1
            let value = state.nextPing
            let payload = Data([UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                                UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)])
            state.pings.append((payload, handler))
            return payload
        }
        guard let payload else {
            handler(state.withLock { $0.failure ?? Self.closedError($0) })
            return
        }
        enqueueOrWrite(Self.frame(.ping, payload), completion: nil)
    }

    /// Writes `frame` now when open, keeps it for the open when connecting, refuses it once closing; decided and
    /// done under one lock, so that nothing is written after our Close.
    private func enqueueOrWrite(_ frame: Data, completion: Completion?) {
        let refusal = state.withLock { state -> (any Error)? in
            if let failure = state.failure {
                return failure
            }
            switch state.phase {
            case .connecting:
                state.queued.append((frame, completion))
                return nil
            case .open:
                return Self.supply(frame, completion: completion, in: &state)
            case .closing, .closed:
                return Self.closedError(state)
            }
        }
        if let refusal {
            completion?(refusal)
        }
    }

    /// Supplies `frame` to the exchange; `completion` runs once the engine took it. `last`: the exchange ends once
    /// the engine took it (our Close after the server's, or after a violation).
    private func write(_ frame: Data, completion: Completion?, last: Bool = false) {
        if let refusal = state.withLock({ Self.supply(frame, completion: completion, last: last, in: &$0) }) {
            completion?(refusal)
        }
    }

    /// ``write(_:completion:last:)`` under the lock: a supply only queues a command for the engine's loop and calls
    /// nothing back, and frames written from two threads (a send, a Pong) go out in the order their offsets were
    /// counted. Returns why the frame could not go.
    private static func supply(
        _ frame: Data,
        completion: Completion?,
        last: Bool = false,
        in state: inout State
    ) -> (any Error)? {
        guard let backend = state.backend, backend.supply(state.transfer, frame, end: false) else {
            return CourierError(.networkConnectionLost, "the WebSocket's connection is gone")
        }
        state.supplied += Int64(frame.count)
        if let completion {
            state.sends.append((state.supplied, completion))
        }
        if last {
            state.endWhenTaken = state.supplied
        }
        return nil
    }

    func taken(_ sent: Int64) {
        let (done, end) = state.withLock { state -> ([Completion], Bool) in
            state.taken = max(state.taken, sent)
            var done: [Completion] = []
            while let first = state.sends.first, first.end <= state.taken {
                done.append(first.completion)
                state.sends.removeFirst()
            }
            guard let endAt = state.endWhenTaken, state.taken >= endAt else {
                return (done, false)
            }
            state.endWhenTaken = nil
            return (done, true)
        }
        done.forEach { $0(nil) }
        if end, let task = endingTask.withLock({ $0 }) {
            task.send(.upgradeEnded(hop: hop, .success, cancelTransfer: true))
        }
    }

    /// The task to end once our last frame was taken (kept only meanwhile).
    private let endingTask = LockedValue<WebSocketTask?>(nil)

    /// Nothing to stop: the connection ends with its task (``ended(error:)``, from `finalize`).
    func stop() {}

    // MARK: Closing

    /// `cancel(with:reason:)`: our Close goes out; the task ends when the server's comes back (or at the timeout).
    func close(code: WebSocketTask.CloseCode, reason: Data?, for task: WebSocketTask) {
        let phase = state.withLock { state -> Phase in
            let phase = state.phase
            if phase == .open {
                state.phase = .closing
                state.closeCode = code
                state.closeReason = reason
            }
            return phase
        }
        switch phase {
        case .connecting:
            task.cancel()
        case .open:
            let payload = WebSocketFrame.closePayload(code: code == .invalid ? nil : code.rawValue, reason: reason)
            write(Self.frame(.close, payload), completion: nil)
            let hop = self.hop
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.closeTimeout) { [weak task] in
                task?.send(.upgradeEnded(hop: hop, .success, cancelTransfer: true))
            }
        case .closing, .closed:
            break
        }
    }

    /// The server's Close: the handshake is done when ours went out already; else ours answers it with its code.
    private func closeArrived(code: Int?, reason: Data, task: WebSocketTask, work: inout DelegateWork) {
        /// What the Close means: nothing (a second one: the first decided everything), the end of our close
        /// handshake, or the server's beginning, which our Close answers.
        enum Meaning {
            case repeated
            case answer(hop: Int)
            case begin(hop: Int, reply: Data)
        }
        let meaning = state.withLock { state -> Meaning in
            guard !state.closeReceived else {
                return .repeated
            }
            state.closeReceived = true
            state.closeCode =
                code.flatMap(WebSocketTask.CloseCode.init(rawValue:)) ?? (code == nil ? .noStatusReceived : .invalid)
            state.closeReason = reason.isEmpty ? nil : reason
            defer { state.phase = .closed }
            guard state.phase == .open else {
                return .answer(hop: state.hop)
            }
            return .begin(hop: state.hop, reply: WebSocketFrame.closePayload(code: code, reason: nil))
        }
        switch meaning {
        case .repeated:
            return
        case .answer(let hop):
            task.send(.upgradeEnded(hop: hop, .success, cancelTransfer: true), work: &work)
        case .begin(let hop, let reply):
            // The outcome is decided now: the server may close the connection before our answer went out.
            task.send(.upgradeEnded(hop: hop, .success, cancelTransfer: false), work: &work)
            endingTask.withLock { $0 = task }
            write(Self.frame(.close, reply), completion: nil, last: true)
        }
    }

    /// The server broke the protocol: our Close with the code goes out, and the task fails.
    private func fail(_ violation: WebSocketViolation, task: WebSocketTask, work: inout DelegateWork) {
        let (write, hop) = state.withLock { state -> (Bool, Int) in
            let open = state.phase == .open
            state.phase = .closed
            if open {
                state.closeCode = WebSocketTask.CloseCode(rawValue: violation.closeCode) ?? .protocolError
            }
            return (open, state.hop)
        }
        let code: CourierError.Code = violation.closeCode == 1009 ? .dataLengthExceedsMaximum : .badServerResponse
        let error = CourierError(code, "the WebSocket was closed (\(violation.closeCode)): \(violation.reason)")
        task.send(.upgradeEnded(hop: hop, .failure(error), cancelTransfer: !write), work: &work)
        if write {
            endingTask.withLock { $0 = task }
            let payload = WebSocketFrame.closePayload(code: violation.closeCode, reason: nil)
            self.write(Self.frame(.close, payload), completion: nil, last: true)
        }
    }

    /// The task ended (``SessionTask/finalize``): whatever waits fails with `error` (or, after a clean close, with
    /// the connection being closed). Returns whether the close handshake completed (the delegate hears
    /// `didCloseWith`).
    func ended(error: CourierError?) -> Bool {
        let (receivers, sends, pings, failure, clean) = state.withLock { state in
            let clean = error == nil && state.closeReceived
            state.phase = .closed
            if state.failure == nil {
                state.failure = error ?? Self.closedError(state)
            }
            defer {
                state.receivers = []
                state.sends = []
                state.pings = []
                state.queued = []
            }
            let sends = state.sends.map(\.completion) + state.queued.compactMap(\.1)
            return (state.receivers, sends, state.pings, state.failure!, clean)
        }
        endingTask.withLock { $0 = nil }
        receivers.forEach { $0(.failure(failure)) }
        sends.forEach { $0(failure) }
        pings.forEach { $0.handler(failure) }
        return clean
    }

    // MARK: Helpers

    private static func frame(_ opcode: WebSocketFrame.Opcode, _ payload: Data) -> Data {
        WebSocketFrame(fin: true, opcode: opcode, payload: payload).encoded(maskKey: WebSocketFrame.randomMaskKey())
    }

    private static func size(of message: WebSocketTask.Message) -> Int {
        switch message {
        case .data(let data): data.count
        case .string(let text): text.utf8.count
        }
    }

    private static func closedError(_ state: State) -> CourierError {
        CourierError(
            .networkConnectionLost,
            "the WebSocket is closed (\(state.closeCode.rawValue))"
        )
    }
}
