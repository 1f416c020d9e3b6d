package import Foundation

/// Tasks that report to a ``TaskObserver`` instead of the session's delegate: how courierd runs a background task's
/// attempt straight from its journaled request.
extension Session {
    /// A download of `request`; the hops to its URL are sent as `template` says (the spec an app's task built: its
    /// header lines in their order, its proxy and HTTP/2 settings), with what each hop adds (a range to resume).
    package func observedDownload(
        _ request: TaskRequest,
        template: TransferSpec,
        observer: any TaskObserver
    ) -> DownloadTask {
        makeDownloadTask(request, sink: .observer(observer, template: template))
    }

    /// A download that continues from `resumeData` (``downloadTask(withResumeData:)``), `template` as above.
    package func observedDownload(
        resumeData: Data,
        template: TransferSpec,
        observer: any TaskObserver
    ) -> DownloadTask {
        makeResumedTask(resumeData, sink: .observer(observer, template: template))
    }

    /// An upload of the file at `file` (``uploadTask(with:fromFile:)``), `template` as above; its response body is
    /// in the observer's ``TaskEnd/body``.
    package func observedUpload(
        _ request: TaskRequest,
        file: URL,
        template: TransferSpec,
        observer: any TaskObserver
    ) -> UploadTask {
        makeUploadTask(request, body: .file(file), sink: .observer(observer, template: template))
    }

    /// ``invalidateAndCancel()``, then `invalidated` once the session is invalid (after every task's end was
    /// reported); never when the session was already invalidated.
    package func invalidateAndCancel(then invalidated: @escaping @Sendable () -> Void) {
        core.whenInvalidated(invalidated)
        invalidateAndCancel()
    }
}
