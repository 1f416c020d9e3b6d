import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// ``TaskAction/finish(_:)``: reports the end of the task (the machine emits it exactly once): files, resume
    /// data, metrics, then the completion, in the documented order. Called with no lock held.
    func finalize(_ outcome: TaskOutcome, work: inout DelegateWork) {
        let final = storage.withLock { $0.takeFinalReport() }
        var error = outcome.error
        var resumeData: Data?
        var downloadedFile: URL?
        if kind == .download, error == nil, let staging = final.staging,
            let mismatch = checksumMismatch(final, staging)
        {
            // Not the file that was asked for: never handed over, never resumed.
            FileManager.default.removeFile(at: staging)
            error = mismatch
        } else if kind == .download {
            if error == nil {
                downloadedFile = final.staging
            } else if let carried = error?.resumeData {
                // courierd's resume data (a background session): its partial file is courierd's.
                resumeData = carried
                final.staging.map { FileManager.default.removeFile(at: $0) }
            } else if let staging = final.staging {
                resumeData = keepForResume(staging: staging, final: final, error: error)
                if resumeData == nil {
                    FileManager.default.removeFile(at: staging)
                }
                error?.resumeData = resumeData
            }
        }
        if kind != .download, let spool = final.staging {
            // A background upload's body written to a file (courierd has its own copy).
            FileManager.default.removeFile(at: spool)
        }
        if let error {
            storage.withLock { $0.error = error }
            core.logger?.debug(
                "task failed",
                metadata: ["task": "\(taskIdentifier)", "error": "\(error)"]
            )
        }

        let core = self.core
        if final.startDate != nil {
            let (sent, received) = storage.withLock { ($0.sent, $0.bodyOffset + $0.received) }
            core.telemetry.taskEnded(
                final.span,
                error: error,
                status: final.response?.head.status,
                sentBytes: sent,
                receivedBytes: received
            )
        }
        // Leave the registry before anyone hears of the end, so that a caller resumed by the completion never
        // sees its task among the session's live tasks; tell the core once the completion is queued (below), so
        // that `didBecomeInvalid` comes after it.
        core.unregister(key: registryKey, task: self)
        if let progress = final.progress {
            SessionTask.finish(progress, error: error)
        }
        storage.withLock { machine in
            defer { machine.bodySupplier = nil }
            return machine.bodySupplier
        }?.stop()
        let downloaded = downloadedFile
        let hasTaskDelegate = self.hasTaskDelegate
        let metrics = hasTaskDelegate ? makeMetrics(final) : nil
        let taskResponse = final.response
        let reportedError: (any Error)? = error

        if let handler = final.resumeDataHandler {
            let data = resumeData
            work.append { _ in handler(data) }
        }
        // Order: didFinishDownloadingTo (downloads) → didFinishCollecting → didCompleteWithError / handler.
        // Metrics go only to a task delegate; without one, no delegate-queue work is made at all (the fast path of
        // the async conveniences).
        func appendMetrics(_ work: inout DelegateWork) {
            guard let metrics, hasTaskDelegate else {
                return
            }
            work.append { session in
                guard let session, let delegate = self.taskDelegate else {
                    return
                }
                delegate.urlSession(session, task: self, didFinishCollecting: metrics)
            }
        }

        switch sink {
        case .delegate:
            if let downloadedFile = downloaded, let downloadTask = self as? DownloadTask {
                work.append { session in
                    if let session, let delegate = self.delegate(as: (any SessionDownloadDelegate).self) {
                        delegate.urlSession(session, downloadTask: downloadTask, didFinishDownloadingTo: downloadedFile)
                    }
                    FileManager.default.removeFile(at: downloadedFile)
                }
            }
            if error == nil, !final.chunks.isEmpty, let dataTask = self as? DataTask {
                // `prefersIncrementalDelivery` false: the whole body, once.
                let body = SessionTask.join(final.chunks)
                work.append { session in
                    if let session, let delegate = dataTask.delegate(as: (any SessionDataDelegate).self) {
                        delegate.urlSession(session, dataTask: dataTask, didReceive: body)
                    }
                }
            }
            appendMetrics(&work)
            work.append { session in
                guard let session, let delegate = self.taskDelegate else {
                    return
                }
                delegate.urlSession(session, task: self, didCompleteWithError: reportedError)
            }
        case .dataHandler(let handler):
            let body = error == nil ? SessionTask.join(final.chunks) : nil
            appendMetrics(&work)
            work.append { _ in handler(body, taskResponse?.httpResponse, reportedError) }
        case .inlineData(let handler):
            appendMetrics(&work)
            handler(error == nil ? SessionTask.join(final.chunks) : nil, taskResponse, reportedError)
        case .downloadHandler(let handler):
            appendMetrics(&work)
            work.append { _ in
                handler(downloaded, taskResponse?.httpResponse, reportedError)
                if let downloadedFile = downloaded {
                    FileManager.default.removeFile(at: downloadedFile)
                }
            }
        case .inlineDownload(let handler):
            appendMetrics(&work)
            handler(downloadedFile, taskResponse, reportedError)
            if let downloadedFile {
                FileManager.default.removeFile(at: downloadedFile)
            }
        case .stream(let stream):
            appendMetrics(&work)
            stream.finish(error: error)
        case .webSocket(let connection):
            let closed = connection.ended(error: error)
            if closed, let task = self as? WebSocketTask {
                let (code, reason) = (connection.closeCode, connection.closeReason)
                work.append { session in
                    guard let session, let delegate = task.delegate(as: (any SessionWebSocketDelegate).self) else {
                        return
                    }
                    delegate.urlSession(session, webSocketTask: task, didCloseWith: code, reason: reason)
                }
            }
            appendMetrics(&work)
            work.append { session in
                guard let session, let delegate = self.taskDelegate else {
                    return
                }
                delegate.urlSession(session, task: self, didCompleteWithError: reportedError)
            }
        case .observer(let observer, _):
            let end = TaskEnd(
                response: storage.withLock { $0.observedResponse },
                error: error,
                file: downloaded,
                fileDigest: final.fileDigest,
                body: error == nil && kind != .download ? SessionTask.join(final.chunks) : nil
            )
            work.append { _ in
                // courierd moves a finished download's file away: no `unlink` of a name that is gone.
                if !observer.task(self, ended: end), let downloadedFile = downloaded {
                    FileManager.default.removeFile(at: downloadedFile)
                }
            }
        }
        if final.hasOwnDelegate {
            // Held until its last call has run.
            work.append { _ in self.storage.withLock { $0.ownDelegate = nil } }
        }
        // The completion is in `work`, which the batch queues later: queue it now, so that the invalidation a
        // task on another loop thread may complete comes after it.
        if !work.isEmpty {
            core.dispatcher.enqueue(work)
            work = DelegateWork()
        }
        core.completionQueued()
    }

    /// The session went away without invalidation: end the task as cancelled without asking anyone.
    func abandon(work: inout DelegateWork) {
        send(.abandon, work: &work)
    }

    /// True when the response's body has a content coding other than `identity` (Courier decoded it).
    static func hasContentCoding(_ head: ResponseHead) -> Bool {
        guard let coding = head.value("Content-Encoding")?.trimmingCharacters(in: .whitespaces).lowercased() else {
            return false
        }
        return !coding.isEmpty && coding != "identity"
    }

    static func join(_ chunks: [Data]) -> Data {
        if chunks.count == 1 {
            return chunks[0]
        }
        var body = Data(capacity: chunks.reduce(0) { $0 + $1.count })
        for chunk in chunks {
            body.append(chunk)
        }
        return body
    }

    private func makeMetrics(_ final: TaskFinalReport) -> SessionTaskMetrics? {
        guard let start = final.startDate else {
            return nil
        }
        let transactions = final.hops.map { hop in
            var transaction = SessionTaskTransactionMetrics(
                request: hop.request,
                response: hop.response,
                start: hop.start,
                engine: hop.metrics ?? TransferMetrics()
            )
            if hop.servedFromCache {
                transaction.resourceFetchType = .localCache
            }
            return transaction
        }
        return SessionTaskMetrics(
            transactionMetrics: transactions,
            taskInterval: DateInterval(start: start, end: max(start, Date())),
            redirectCount: final.redirectCount
        )
    }

    /// Keeps a failed download's partial file in the resume directory and describes it, when a resume is
    /// possible: a GET, a strong validator, byte ranges, and bytes on disk. Returns nil otherwise.
    private func keepForResume(staging: URL, final: TaskFinalReport, error: CourierError?) -> Data? {
        let description = ResumeData.describing(
            request: final.currentRequest ?? final.originalRequest,
            originalRequest: final.originalRequest,
            response: final.response?.head,
            resumeSource: final.resumeSource,
            bytesOnDisk: final.bytesOnDisk,
            segments: final.segmentMap
        )
        return description?.keeping(staging, in: core.configuration.resumeDataDirectory)?.encoded()
    }
}
