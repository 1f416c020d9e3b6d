public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Events of data and upload tasks.
///
/// Order for one task: `didReceive response` (once, for the final response) → `didReceive data`* →
/// `willCacheResponse` (at most once) → `didFinishCollecting` → `didCompleteWithError`. Tasks made with a
/// completion handler or by an async convenience get none of these calls (only redirects, challenges, metrics).
public protocol SessionDataDelegate: SessionTaskDelegate {
    /// The final response arrived; its body waits until `completionHandler` is called (once, from any thread).
    /// Because this delegate conforms to `SessionDataDelegate`, every data task of the session asks.
    /// Default: `.allow`.
    func urlSession(
        _ session: Session,
        dataTask: DataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (Session.ResponseDisposition) -> Void
    )

    /// After `.becomeDownload`: `downloadTask` continues the same transfer and gets the download calls;
    /// `dataTask` gets no further calls (not even `didCompleteWithError`). Called once, before any download call.
    func urlSession(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask)

    /// Body bytes, in order, zero or more times. Each `data` is one batch from the engine (not copied).
    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data)

    /// The session is about to store `proposedResponse` (the response and its whole body) in its
    /// ``SessionConfiguration/urlCache``: call `completionHandler` (once, from any thread) with it, a changed
    /// `CachedURLResponse`, or nil to store nothing. Called at most once per task, after the last `didReceive data`
    /// and before `didCompleteWithError`; only for tasks whose response may be stored (RFC 9111) and is small
    /// enough, and for a stored response a 304 refreshed. Default: stores `proposedResponse`.
    func urlSession(
        _ session: Session,
        dataTask: DataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    )
}

/// The defaults; a task's own delegate passes each call it leaves to its default on to the session's delegate (see
/// ``SessionTaskDelegate``).
extension SessionDataDelegate {
    public func urlSession(
        _ session: Session,
        dataTask: DataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (Session.ResponseDisposition) -> Void
    ) {
        guard let next = passedOn(dataTask, in: session, as: (any SessionDataDelegate).self) else {
            completionHandler(.allow)
            return
        }
        next.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }

    public func urlSession(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) {
        passedOn(dataTask, in: session, as: (any SessionDataDelegate).self)?
            .urlSession(session, dataTask: dataTask, didBecome: downloadTask)
    }

    public func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        passedOn(dataTask, in: session, as: (any SessionDataDelegate).self)?
            .urlSession(session, dataTask: dataTask, didReceive: data)
    }

    public func urlSession(
        _ session: Session,
        dataTask: DataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        guard let next = passedOn(dataTask, in: session, as: (any SessionDataDelegate).self) else {
            completionHandler(proposedResponse)
            return
        }
        next.urlSession(
            session,
            dataTask: dataTask,
            willCacheResponse: proposedResponse,
            completionHandler: completionHandler
        )
    }
}
