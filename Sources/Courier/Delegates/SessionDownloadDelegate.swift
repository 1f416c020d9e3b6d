public import Foundation

/// Events of download tasks.
///
/// Order for one task: `didResumeAtOffset` (once, only for a task made from resume data) → `didWriteData`* →
/// `didFinishDownloadingTo` (only on success) → `didFinishCollecting` → `didCompleteWithError`.
public protocol SessionDownloadDelegate: SessionTaskDelegate {
    /// The download succeeded. `location` is the staging file; it is valid only during this call (move or open
    /// it here) and deleted right after the call returns. `didCompleteWithError(nil)` follows. Exactly once per
    /// successful download; required.
    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL)

    /// Download progress, coalesced: zero or more times. `totalBytesWritten` includes the resumed offset and
    /// never decreases (except to restart from 0 after `didResumeAtOffset(0, …)`).
    /// `totalBytesExpectedToWrite` is `SessionTask.transferSizeUnknown` (-1) when the length is unknown.
    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    )

    /// A task made with resume data got its response: the body continues at `fileOffset` (0 when the server
    /// sent the whole entity again: a restart). Once, before any `didWriteData`.
    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    )
}

/// The defaults; a task's own delegate passes each call it leaves to its default on to the session's delegate (see
/// ``SessionTaskDelegate``).
extension SessionDownloadDelegate {
    public func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        passedOn(downloadTask, in: session, as: (any SessionDownloadDelegate).self)?.urlSession(
            session,
            downloadTask: downloadTask,
            didWriteData: bytesWritten,
            totalBytesWritten: totalBytesWritten,
            totalBytesExpectedToWrite: totalBytesExpectedToWrite
        )
    }

    public func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        passedOn(downloadTask, in: session, as: (any SessionDownloadDelegate).self)?.urlSession(
            session,
            downloadTask: downloadTask,
            didResumeAtOffset: fileOffset,
            expectedTotalBytes: expectedTotalBytes
        )
    }
}
