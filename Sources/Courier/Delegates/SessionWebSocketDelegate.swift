public import Foundation

/// Events of WebSocket tasks (``WebSocketTask``).
///
/// Order for one task: `didOpenWithProtocol` (once, when the handshake succeeded) → `didCloseWith` (once, when the
/// close handshake completed; not for a connection that ended otherwise) → `didFinishCollecting` →
/// `didCompleteWithError` (nil after a close handshake).
public protocol SessionWebSocketDelegate: SessionTaskDelegate {
    /// The server accepted the handshake; `protocol` is the subprotocol it chose of those offered, or nil.
    func urlSession(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?)

    /// The close handshake completed: `closeCode` and `reason` are the server's (``WebSocketTask/closeCode``).
    func urlSession(
        _ session: Session,
        webSocketTask: WebSocketTask,
        didCloseWith closeCode: WebSocketTask.CloseCode,
        reason: Data?
    )
}

/// The defaults; a task's own delegate passes each call it leaves to its default on to the session's delegate (see
/// ``SessionTaskDelegate``).
extension SessionWebSocketDelegate {
    public func urlSession(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?) {
        passedOn(webSocketTask, in: session, as: (any SessionWebSocketDelegate).self)?
            .urlSession(session, webSocketTask: webSocketTask, didOpenWithProtocol: `protocol`)
    }

    public func urlSession(
        _ session: Session,
        webSocketTask: WebSocketTask,
        didCloseWith closeCode: WebSocketTask.CloseCode,
        reason: Data?
    ) {
        passedOn(webSocketTask, in: session, as: (any SessionWebSocketDelegate).self)?
            .urlSession(session, webSocketTask: webSocketTask, didCloseWith: closeCode, reason: reason)
    }
}
