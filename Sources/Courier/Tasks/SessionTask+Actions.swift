import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// Carries out what the machine decided, in order. Called with no lock held.
    func perform(_ actions: [TaskAction], work: inout DelegateWork) {
        for action in actions {
            switch action {
            case .start:
                start(work: &work)
            case .submit(let plan):
                submit(plan, work: &work)
            case .cancelTransfer(let transfer):
                core.runningBackend?.cancel(transfer)
            case .pauseTransfer(let transfer):
                core.runningBackend?.pause(transfer)
            case .resumeTransfer(let transfer):
                core.runningBackend?.resume(transfer)
            case .decide(let transfer, let decision):
                core.runningBackend?.decide(transfer, decision)
            case .storeCookies(let response):
                core.storeCookies(response.head, url: response.url)
            case .ask(let question):
                ask(question, work: &work)
            case .deliver(let delivery):
                deliver(delivery, work: &work)
            case .becomeDownload(let transfer, let staging):
                becomeDownload(transfer: transfer, staging: staging)
            case .finish(let outcome):
                finalize(outcome, work: &work)
            }
        }
    }

    // MARK: Deliveries

    /// Hands a delivery to whoever takes it for this task's sink and delegate; the others drop it.
    private func deliver(_ delivery: TaskDelivery, work: inout DelegateWork) {
        switch delivery {
        case .response(let response):
            if case .stream(let stream) = sink, let response = response.httpResponse {
                stream.receive(response)
            }
        case .data(let data):
            switch sink {
            case .delegate:
                guard core.isDataDelegate, let dataTask = self as? DataTask else {
                    return
                }
                work.append { [core] session in
                    guard let session, let delegate = core.delegate as? any SessionDataDelegate else {
                        return
                    }
                    delegate.urlSession(session, dataTask: dataTask, didReceive: data)
                }
            case .stream(let stream):
                if stream.append(data) {
                    send(.backpressure(true), work: &work)
                }
            case .dataHandler, .inlineData, .downloadHandler, .inlineDownload:
                break
            }
        case .sentBodyData(let delta, let total, let expected):
            guard core.isTaskDelegate else {
                return
            }
            work.append { [core] session in
                guard let session, let delegate = core.taskDelegate else {
                    return
                }
                delegate.urlSession(
                    session,
                    task: self,
                    didSendBodyData: delta,
                    totalBytesSent: total,
                    totalBytesExpectedToSend: expected
                )
            }
        case .wroteData(let delta, let total, let expected):
            guard case .delegate = sink, core.isDownloadDelegate, let downloadTask = self as? DownloadTask else {
                return
            }
            work.append { [core] session in
                guard let session, let delegate = core.delegate as? any SessionDownloadDelegate else {
                    return
                }
                delegate.urlSession(
                    session,
                    downloadTask: downloadTask,
                    didWriteData: delta,
                    totalBytesWritten: total,
                    totalBytesExpectedToWrite: expected
                )
            }
        case .resumed(let offset, let expectedTotal):
            guard case .delegate = sink, core.isDownloadDelegate, let downloadTask = self as? DownloadTask else {
                return
            }
            work.append { [core] session in
                guard let session, let delegate = core.delegate as? any SessionDownloadDelegate else {
                    return
                }
                delegate.urlSession(
                    session,
                    downloadTask: downloadTask,
                    didResumeAtOffset: offset,
                    expectedTotalBytes: expectedTotal
                )
            }
        }
    }

    // MARK: `.becomeDownload`

    /// The same transfer continues into `staging` as a new ``DownloadTask`` that takes over the registry key; this
    /// data task has ended silently.
    private func becomeDownload(transfer: UInt64, staging: URL) {
        guard let dataTask = self as? DataTask else {
            return
        }
        let successor = storage.withLock { $0.successorForDownload(staging: staging) }
        let downloadTask = DownloadTask(
            core: core,
            kind: .download,
            identifier: core.makeIdentifier(),
            registryKey: registryKey,
            request: successor.originalRequest,
            sink: .delegate,
            machine: successor
        )
        core.replace(key: registryKey, with: downloadTask)
        // Queued before the transfer moves on, so that `didBecome` comes before the download's first event.
        var work = DelegateWork()
        work.append { [core] session in
            guard let session, let delegate = core.delegate as? any SessionDataDelegate else {
                return
            }
            delegate.urlSession(session, dataTask: dataTask, didBecome: downloadTask)
        }
        core.dispatcher.enqueue(work)
        if let error = core.runningBackend?.decide(transfer, .toFile(path: staging.path)) {
            downloadTask.send(.heldFailed(hop: successor.hop, error))
        }
    }
}
