package import Foundation

/// Tasks that report to a ``TaskObserver`` instead of the session's delegate: how courierd runs a background task's
/// attempt straight from its journaled request.
extension Session {
    /// A download of `request` as given: its header fields, method and body reach the engine unchanged.
    package func observedDownload(_ request: TaskRequest, observer: any TaskObserver) -> DownloadTask {
        makeDownloadTask(request, sink: .observer(observer))
    }

    /// A download that continues from `resumeData` (``downloadTask(withResumeData:)``).
    package func observedDownload(resumeData: Data, observer: any TaskObserver) -> DownloadTask {
        makeResumedTask(resumeData, sink: .observer(observer))
    }

    /// An upload of the file at `file` (``uploadTask(with:fromFile:)``); its response body is in the observer's
    /// ``TaskEnd/body``.
    package func observedUpload(_ request: TaskRequest, file: URL, observer: any TaskObserver) -> UploadTask {
        makeUploadTask(request, body: .file(file), sink: .observer(observer))
    }

    /// ``invalidateAndCancel()``, then `invalidated` once the session is invalid (after every task's end was
    /// reported); never when the session was already invalidated.
    package func invalidateAndCancel(then invalidated: @escaping @Sendable () -> Void) {
        core.whenInvalidated(invalidated)
        invalidateAndCancel()
    }
}
