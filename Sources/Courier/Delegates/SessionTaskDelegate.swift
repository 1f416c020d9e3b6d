public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Events common to every kind of task.
///
/// Order for one task: `didCreateTask` (on the thread that made the task), then (`willPerformHTTPRedirection` |
/// `didReceive challenge` | `didReceiveInformationalResponse`)* interleaved with `didSendBodyData`*, then the
/// kind-specific calls, then `didFinishCollecting` once, then `didCompleteWithError` exactly once. All but the first
/// on the session's delegate queue, serially.
///
/// A task may have a delegate of its own (``SessionTask/delegate``, or the `delegate:` argument of the async
/// conveniences): it is asked first, and each method it leaves to its default goes on to the session's delegate, as
/// on Apple's platforms (iOS 15). Session-level calls (`didBecomeInvalidWithError`, the session's server-trust
/// challenge, `urlSessionDidFinishEvents`) go to the session's delegate only.
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

    /// The task's streamed body is needed: for the first exchange of a task made with
    /// `uploadTask(withStreamedRequest:)`, and for every later exchange that sends the body again (a 307 or 308
    /// redirect, an authentication retry) of such a task or of one whose request had an `httpBodyStream` (a stream is
    /// read once). Call `completionHandler` once, from any thread, with a new stream of the whole body (Courier opens
    /// and closes it, and reads it on a thread of its own), or nil to fail the task with `requestBodyStreamExhausted`.
    /// Default: nil.
    func urlSession(
        _ session: Session,
        task: SessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    )

    /// As ``urlSession(_:task:needNewBodyStream:)``, for a resumable upload that goes on from `offset` after a cut
    /// (iOS 17): the stream must start at that byte of the body. Default: nil (the task fails with
    /// `requestBodyStreamExhausted`).
    func urlSession(
        _ session: Session,
        task: SessionTask,
        needNewBodyStreamFrom offset: Int64,
        completionHandler: @escaping @Sendable (InputStream?) -> Void
    )

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

    /// The session made `task`: once per task, synchronously on the thread that made it (inside `dataTask(with:)`
    /// and the other factories, and inside an async convenience such as `data(for:delegate:)` before it resumes the
    /// task), before any other call for it, so that the task can be set up (its `priority`, its `taskDescription`)
    /// before it starts. Not called for the tasks a background session adopts after a relaunch. Default: nothing.
    func urlSession(_ session: Session, didCreateTask task: SessionTask)

    /// An informational (1xx) response arrived before the final one: `103 Early Hints`, `102 Processing`, `104 Upload
    /// Resumption Supported` and the like, never `100 Continue` or `101 Switching Protocols`. Zero or more times per
    /// exchange, in order, before the final response's calls; not for background sessions. Default: nothing.
    func urlSession(_ session: Session, task: SessionTask, didReceiveInformationalResponse response: HTTPURLResponse)
}

/// The defaults. Each one, when the delegate is a task's own (``SessionTask/delegate``), passes the call on to the
/// session's delegate, as Apple does for a method a task's delegate does not implement; for the session's delegate
/// it does what its method's documentation says.
extension SessionTaskDelegate {
    public func urlSession(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let next = passedOn(task, in: session, as: (any SessionTaskDelegate).self) else {
            completionHandler(request)
            return
        }
        next.urlSession(
            session,
            task: task,
            willPerformHTTPRedirection: response,
            newRequest: request,
            completionHandler: completionHandler
        )
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let next = passedOn(task, in: session, as: (any SessionTaskDelegate).self) else {
            completionHandler(.performDefaultHandling, ServerTrustDecisions.taskDefaultMarker)
            return
        }
        next.urlSession(session, task: task, didReceive: challenge, completionHandler: completionHandler)
    }

    public func urlSession(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) {
        passedOn(task, in: session, as: (any SessionTaskDelegate).self)?
            .urlSession(session, taskIsWaitingForConnectivity: task)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (Session.DelayedRequestDisposition, URLRequest?) -> Void
    ) {
        guard let next = passedOn(task, in: session, as: (any SessionTaskDelegate).self) else {
            completionHandler(.continueLoading, nil)
            return
        }
        next.urlSession(session, task: task, willBeginDelayedRequest: request, completionHandler: completionHandler)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        passedOn(task, in: session, as: (any SessionTaskDelegate).self)?.urlSession(
            session,
            task: task,
            didSendBodyData: bytesSent,
            totalBytesSent: totalBytesSent,
            totalBytesExpectedToSend: totalBytesExpectedToSend
        )
    }

    public func urlSession(_ session: Session, task: SessionTask, didFinishCollecting metrics: SessionTaskMetrics) {
        passedOn(task, in: session, as: (any SessionTaskDelegate).self)?
            .urlSession(session, task: task, didFinishCollecting: metrics)
    }

    public func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        passedOn(task, in: session, as: (any SessionTaskDelegate).self)?
            .urlSession(session, task: task, didCompleteWithError: error)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        guard let next = passedOn(task, in: session, as: (any SessionTaskDelegate).self) else {
            completionHandler(nil)
            return
        }
        next.urlSession(session, task: task, needNewBodyStream: completionHandler)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        needNewBodyStreamFrom offset: Int64,
        completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        guard let next = passedOn(task, in: session, as: (any SessionTaskDelegate).self) else {
            completionHandler(nil)
            return
        }
        next.urlSession(session, task: task, needNewBodyStreamFrom: offset, completionHandler: completionHandler)
    }

    public func urlSession(_ session: Session, didCreateTask task: SessionTask) {
        passedOn(task, in: session, as: (any SessionTaskDelegate).self)?.urlSession(session, didCreateTask: task)
    }

    public func urlSession(
        _ session: Session,
        task: SessionTask,
        didReceiveInformationalResponse response: HTTPURLResponse
    ) {
        passedOn(task, in: session, as: (any SessionTaskDelegate).self)?
            .urlSession(session, task: task, didReceiveInformationalResponse: response)
    }
}


