public import Foundation

/// A WebSocket connection (RFC 6455) made by a ``Session``, in the shape of `URLSessionWebSocketTask`: messages are
/// sent and received whole (``send(_:completionHandler:)``, ``receive(completionHandler:)`` and their async forms),
/// pings answered and sent, and the connection closed with a code (``cancel(with:reason:)``).
///
/// The opening handshake is an HTTP/1.1 exchange of the session's like any task's (cookies, redirects, authentication
/// and server-trust challenges, proxies, TLS settings, metrics), over `ws`/`http` or `wss`/`https`; the connection is
/// the engine's, on its event loop, with no thread of its own. Messages that arrive with no `receive` waiting are kept
/// in order; past 4 MiB of them (or ``maximumMessageSize`` when larger) the task stops reading the socket until some
/// are received, so that a slow reader holds back the server instead of filling memory. Sends are completed once the
/// engine took their bytes, so awaiting each `send` paces a fast writer to the network.
///
/// The delegate (a ``SessionWebSocketDelegate``) hears `didOpenWithProtocol` once the handshake succeeded, and
/// `didCloseWith` once the close handshake is done (either side may begin it), before `didCompleteWithError(nil)`.
/// A connection that ends otherwise (a lost connection, a server that breaks the protocol, a handshake refused) ends
/// the task with that error, and every waiting `receive`, `send` and ping fails with it. Not in background sessions
/// (as on Apple's platforms).
///
/// `@unchecked Sendable` for the reason given on ``SessionTask``; the connection's state is behind its own lock.
public final class WebSocketTask: SessionTask, @unchecked Sendable {
    /// A message, as sent or received.
    public enum Message: Sendable, Equatable {
        case data(Data)
        case string(String)
    }

    /// The close codes of RFC 6455 §7.4.1, as `URLSessionWebSocketTask.CloseCode`.
    public enum CloseCode: Int, Sendable {
        case invalid = 0
        case normalClosure = 1000
        case goingAway = 1001
        case protocolError = 1002
        case unsupportedData = 1003
        case noStatusReceived = 1005
        case abnormalClosure = 1006
        case invalidFramePayloadData = 1007
        case policyViolation = 1008
        case messageTooBig = 1009
        case mandatoryExtensionMissing = 1010
        case internalServerError = 1011
        case tlsHandshakeFailure = 1015
    }

    let connection: WebSocketConnection

    init(core: SessionCore, request: TaskRequest, connection: WebSocketConnection) {
        self.connection = connection
        super.init(
            core: core,
            kind: .data,
            identifier: core.makeIdentifier(),
            request: request,
            sink: .webSocket(connection)
        )
    }

    /// The largest message `receive` accepts (default 1 MiB, as Apple's): a larger one closes the connection with
    /// ``CloseCode/messageTooBig`` and fails the task with `dataLengthExceedsMaximum`. Set it before `resume()`.
    public var maximumMessageSize: Int {
        get { connection.maximumMessageSize }
        set { connection.maximumMessageSize = max(newValue, 125) }
    }

    /// The code of the close handshake: the server's, once its Close arrived (``CloseCode/noStatusReceived`` when it
    /// sent none), else the one ``cancel(with:reason:)`` sent; ``CloseCode/invalid`` while open.
    public var closeCode: CloseCode {
        connection.closeCode
    }

    /// The reason that came with ``closeCode``, if any.
    public var closeReason: Data? {
        connection.closeReason
    }

    /// Sends `message` (a text or binary message, in one frame); `completionHandler` runs once, on any thread, when
    /// its bytes were taken for sending, or with the error that ended the connection. A message sent before the
    /// handshake completed goes out right after it.
    public func send(_ message: Message, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        connection.send(message, for: self, completion: completionHandler)
    }

    /// Sends `message` and returns once its bytes were taken for sending.
    public func send(_ message: Message) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            send(message) { error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume()
                }
            }
        }
    }

    /// The next message, in the order they arrived: `completionHandler` runs once, on any thread, with it, or with
    /// the error that ended the connection. Several calls wait in order.
    public func receive(completionHandler: @escaping @Sendable (Result<Message, any Error>) -> Void) {
        connection.receive(for: self, completionHandler)
    }

    /// The next message.
    public func receive() async throws -> Message {
        try await withCheckedThrowingContinuation { continuation in
            receive { continuation.resume(with: $0) }
        }
    }

    /// Sends a Ping; `pongReceiveHandler` runs once, on any thread, when its Pong came back (nil), or with the error
    /// that ended the connection first.
    public func sendPing(pongReceiveHandler: @escaping @Sendable ((any Error)?) -> Void) {
        connection.sendPing(for: self, pongReceiveHandler)
    }

    /// Begins the close handshake with `closeCode` and `reason` (at most 123 bytes are sent): the task completes once
    /// the server's Close came back (after 10 s without it, it completes all the same). Before the handshake
    /// completed, it cancels the task. Later calls do nothing.
    public func cancel(with closeCode: CloseCode, reason: Data?) {
        connection.close(code: closeCode, reason: reason, for: self)
    }
}
