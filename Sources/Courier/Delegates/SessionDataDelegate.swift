public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Events of data and upload tasks.
///
/// Order for one task: `didReceive response` (once, for the final response) → `didReceive data`* →
/// `didFinishCollecting` → `didCompleteWithError`. Tasks made with a completion handler or by an async
/// convenience get none of these calls (only redirects, challenges, metrics).
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
}

extension SessionDataDelegate {
    public func urlSession(
        _ session: Session,
        dataTask: DataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (Session.ResponseDisposition) -> Void
    ) {
        completionHandler(.allow)
    }

    public func urlSession(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) {}

    public func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {}
}
