import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Session-level events.
///
/// Every delegate method of every Courier delegate protocol is called on the session's `delegateQueue`, one at
/// a time (serially, even when the queue is concurrent), in the order documented on each method. All methods
/// have default implementations that do nothing (or the documented default), so implement only what you need.
/// The session holds its delegate strongly until it is invalidated.
public protocol SessionDelegate: AnyObject, Sendable {
    /// The session was invalidated: once, after `finishTasksAndInvalidate()` saw its last task complete, or after
    /// `invalidateAndCancel()` cancelled every task. `error` is nil for an explicit invalidation. It is the last
    /// call the session makes; afterwards it releases the delegate.
    func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?)

    /// A background session delivered every event courierd had kept for it (the ones it missed while the app was
    /// not running): once per such replay, after the replayed task events. Call the completion handler that
    /// `handleEventsForBackgroundURLSession` gave you here.
    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session)

    /// A challenge for the whole session: a server-trust challenge (``URLAuthenticationMethodServerTrust``, the
    /// server's chain in `challenge.protectionSpace.serverTrustDetails`), made when a task's new TLS connection to a
    /// server the session has not decided about has finished its handshake, before any byte of the request is sent
    /// on it. Called once per such connection (tasks that start together before a decision may each ask); the
    /// answer holds for the session and that server's key: `.useCredential` with `URLCredential(trust:)` accepts it
    /// whatever its verification said, `.performDefaultHandling` accepts it only when it verified (else the task
    /// fails with `serverCertificateUntrusted`), `.cancelAuthenticationChallenge` fails the task as cancelled. Call
    /// `completionHandler` once, from any thread. In-process sessions only (courierd verifies a background
    /// session's servers). Default: the task delegate's `urlSession(_:task:didReceive:completionHandler:)` is
    /// asked instead, as on Apple's platforms; when neither is implemented, the session stops asking.
    func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    )
}

extension SessionDelegate {
    public func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {}

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {}

    public func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, ServerTrustDecisions.sessionDefaultMarker)
    }
}
