import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Events common to every kind of task.
///
/// Order for one task: (`willPerformHTTPRedirection` | `didReceive challenge`)* interleaved with
/// `didSendBodyData`*, then the kind-specific calls, then `didFinishCollecting` once, then
/// `didCompleteWithError` exactly once. All on the session's delegate queue, serially.
public protocol SessionTaskDelegate: SessionDelegate {
    /// A response asked for a redirect (a 3xx with a `Location`). Called at most 16 times per task, before the
    /// body of that response is read. Call `completionHandler` (once, from any thread) with the request to
    /// follow (the proposed one, a changed one, or nil to refuse: the 3xx response and its body are then
    /// delivered as the final response). Default: follow `request`.
    ///
    /// `request` already had its method rewritten (301/302 POST and 303 become GET) and, when the origin
    /// changes, `Authorization`, `Cookie` and `Proxy-Authorization` removed. An `https` to `http` redirect or a
    /// non-HTTP scheme fails the task before the delegate is asked.
    func urlSession(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    )

    /// The server answered 401 or 407 with a Basic or Digest challenge. Called once per challenge; after a retry
    /// with a credential fails, the 401/407 is delivered as the final response instead. Also a server-trust
    /// challenge when the session delegate's `urlSession(_:didReceive:completionHandler:)` is not implemented (see
    /// there). Call `completionHandler` once, from any thread. Default: `.performDefaultHandling`.
    func urlSession(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    )

    /// A background task whose `earliestBeginDate` has passed is about to begin: called once, only for a task of a
    /// background session that set `earliestBeginDate`, and only when the app holds the session then (courierd does
    /// not launch the app for it: with no app to ask, or no answer within 30 s, the task begins as it is). Call
    /// `completionHandler` once, from any thread: `.continueLoading`, `.useNewRequest` with the request to send
    /// instead (fresh credentials, say), or `.cancel`. Default: `.continueLoading`.
    func urlSession(
        _ session: Session,
        task: SessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (Session.DelayedRequestDisposition, URLRequest?) -> Void
    )

    /// The task found no network and waits for one (the session's `waitsForConnectivity`): called at most once per
    /// task, before it begins again when a route returns. Default: nothing.
    func urlSession(_ session: Session, taskIsWaitingForConnectivity task: SessionTask)

    /// Upload progress, coalesced: zero or more times, `totalBytesSent` never decreasing within one request.
    func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    )

    /// The task's metrics: exactly once per task that was resumed, right before `didCompleteWithError`.
    func urlSession(_ session: Session, task: SessionTask, didFinishCollecting metrics: SessionTaskMetrics)

    /// The task ended: exactly once per task, the last call for it. `error` is nil on success (any HTTP status
    /// is a success) or a ``CourierIPC/CourierError``, with `resumeData` for a resumable download.
    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?)
}

extension SessionTaskDelegate {
    public func urlSession(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(request)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, ServerTrustDecisions.taskDefaultMarker)
    }

    public func urlSession(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) {}

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (Session.DelayedRequestDisposition, URLRequest?) -> Void
    ) {
        completionHandler(.continueLoading, nil)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {}

    public func urlSession(_ session: Session, task: SessionTask, didFinishCollecting metrics: SessionTaskMetrics) {}

    public func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {}
}
