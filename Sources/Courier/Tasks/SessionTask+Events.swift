import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// Handles one engine event of hop `hop` (on a loop thread). Delegate calls go to `work`.
    func handle(_ event: EngineEvent, hop: Int, work: inout DelegateWork) {
        enum Route {
            case stale
            case current(TaskState.AdoptAction)
        }
        let route = storage.withLock { state -> Route in
            guard hop == state.hop, state.phase == .running, !state.retiredHops.contains(hop) else {
                return .stale
            }
            let action = state.adopt(transfer: event.transfer, hop: hop)
            switch event.payload {
            case .data(let data):
                state.received += Int64(data.count)
            case .progress, .response, .complete:
                state.received = max(state.received, event.progress.received)
            }
            if event.progress.expectedToReceive >= 0 {
                state.expectedToReceive = event.progress.expectedToReceive
            }
            state.sent = max(state.sent, event.progress.sent)
            if event.progress.expectedToSend >= 0 {
                state.expectedToSend = event.progress.expectedToSend
            }
            return .current(action)
        }
        guard case .current(let adoptAction) = route else {
            if case .complete(let completion) = event.payload {
                retiredHopCompleted(hop, completion: completion, work: &work)
            }
            return
        }
        switch adoptAction {
        case .none: break
        case .cancel(let transfer): core.runningEngine?.cancel(transfer)
        case .pause(let transfer): core.runningEngine?.pause(transfer)
        }
        switch event.payload {
        case .response(let held, let resumeOffset, let head):
            receivedResponse(
                head,
                held: held,
                resumeOffset: resumeOffset,
                transfer: event.transfer,
                hop: hop,
                work: &work
            )
        case .data(let data):
            receivedData(data, work: &work)
        case .progress:
            reportProgress(work: &work)
        case .complete(let completion):
            reportProgress(work: &work)
            transferCompleted(completion, hop: hop, work: &work)
        }
    }

    // MARK: Response

    private func receivedResponse(
        _ head: ResponseHead,
        held: Bool,
        resumeOffset: Int64,
        transfer: UInt64,
        hop: Int,
        work: inout DelegateWork
    ) {
        let url = storage.withLock { state -> URL? in
            state.hops.last?.request.url ?? state.currentRequest?.url
        }
        guard let url, let response = head.response(for: url) else {
            // Unreachable with a parsed head; never leave a held transfer waiting.
            failHeld(CourierError(.badServerResponse, "unusable response head"), transfer: transfer)
            return
        }
        core.storeCookies(head, url: url)
        storage.withLock { state in
            if !state.hops.isEmpty {
                state.hops[state.hops.count - 1].response = response
            }
        }
        if held {
            if (300...399).contains(head.status),
                let target = RedirectPolicy.target(location: head.value("Location"), relativeTo: url)
            {
                beginRedirect(to: target, response: response, head: head, transfer: transfer, hop: hop, work: &work)
                return
            }
            if head.status == 401 || head.status == 407 {
                beginAuthentication(response: response, head: head, transfer: transfer, hop: hop, work: &work)
                return
            }
        }
        deliverFinalResponse(
            response,
            head: head,
            held: held,
            resumeOffset: resumeOffset,
            transfer: transfer,
            hop: hop,
            work: &work
        )
    }

    /// A held 3xx or 401/407 that Courier does not follow or answer becomes the task's final response.
    func deliverHeldAsFinal(
        _ response: HTTPURLResponse,
        head: ResponseHead,
        transfer: UInt64,
        hop: Int,
        work: inout DelegateWork
    ) {
        deliverFinalResponse(
            response,
            head: head,
            held: true,
            resumeOffset: 0,
            transfer: transfer,
            hop: hop,
            work: &work
        )
    }

    /// The response whose body the task delivers: record it, tell the delegate or the stream, release a hold.
    func deliverFinalResponse(
        _ response: HTTPURLResponse,
        head: ResponseHead,
        held: Bool,
        resumeOffset: Int64,
        transfer: UInt64,
        hop: Int,
        work: inout DelegateWork
    ) {
        let (requestedOffset, isResumedTask) = storage.withLock { state -> (Int64, Bool) in
            state.response = response
            state.head = head
            state.bodyOffset = resumeOffset
            state.awaiting = nil
            return (state.requestedResumeOffset, state.resumeSource != nil)
        }
        if kind == .download {
            if requestedOffset > 0 && head.status == 416 && SessionTask.rangeIsComplete(head, offset: requestedOffset) {
                // Everything is already on disk: finish with the partial file as the download.
                storage.withLock { state in
                    state.forcedOutcome = .success(())
                    state.bodyOffset = requestedOffset
                    state.received = 0
                }
                core.runningEngine?.decide(transfer, .cancel)
                return
            }
            if held && requestedOffset > 0 && head.status != 200 && head.status != 206 {
                // An error page must not be appended to the partial file: keep the partial and fail (with resume
                // data, so the caller can try again later).
                failHeld(
                    CourierError(
                        .badServerResponse,
                        "the server answered \(head.status) to the resumed request",
                        failingURL: response.url
                    ),
                    transfer: transfer
                )
                return
            }
            if held {
                core.runningEngine?.decide(transfer, .allow)
            }
            if isResumedTask, case .delegate = sink, core.isDownloadDelegate {
                let expected = storage.withLock { $0.expectedToReceive }
                let total = expected >= 0 ? resumeOffset + expected : SessionTask.transferSizeUnknown
                let task = self as! DownloadTask
                work.append { [core] session in
                    guard let session, let delegate = core.delegate as? any SessionDownloadDelegate else {
                        return
                    }
                    delegate.urlSession(
                        session,
                        downloadTask: task,
                        didResumeAtOffset: resumeOffset,
                        expectedTotalBytes: total
                    )
                }
            }
            return
        }
        if case .stream(let stream) = sink {
            stream.receive(response)
        }
        if held {
            if case .delegate = sink, core.isDataDelegate {
                askDisposition(response, transfer: transfer, hop: hop, work: &work)
            } else {
                core.runningEngine?.decide(transfer, .allow)
            }
        }
    }

    /// A 416 whose `Content-Range: bytes */N` says the entity is exactly `offset` bytes long.
    static func rangeIsComplete(_ head: ResponseHead, offset: Int64) -> Bool {
        guard let range = head.value("Content-Range"), range.lowercased().hasPrefix("bytes */"),
            let total = Int64(range.dropFirst("bytes */".count).trimmingCharacters(in: .whitespaces))
        else {
            return false
        }
        return total == offset
    }

    // MARK: Body and progress

    private func receivedData(_ data: Data, work: inout DelegateWork) {
        switch sink {
        case .delegate:
            guard core.isDataDelegate, kind != .download, let dataTask = self as? DataTask else {
                return
            }
            work.append { [core] session in
                guard let session, let delegate = core.delegate as? any SessionDataDelegate else {
                    return
                }
                delegate.urlSession(session, dataTask: dataTask, didReceive: data)
            }
        case .dataHandler, .inlineData:
            storage.withLock { $0.bodyChunks.append(data) }
        case .stream(let stream):
            if stream.append(data) {
                setBackpressure(paused: true)
            }
        case .downloadHandler, .inlineDownload:
            break
        }
    }

    /// Coalesced progress: one delegate call per kind per batch at most.
    private func reportProgress(work: inout DelegateWork) {
        guard core.isTaskDelegate else {
            return
        }
        let (received, receivedDelta, expected, sent, sentDelta, expectedToSend) = storage.withLock { state in
            let receivedDelta = state.received - state.reportedReceived
            let sentDelta = state.sent - state.reportedSent
            state.reportedReceived = state.received
            state.reportedSent = state.sent
            let expected = state.expectedToReceive >= 0 ? state.bodyOffset + state.expectedToReceive : -1
            return (
                state.bodyOffset + state.received, receivedDelta, expected, state.sent, sentDelta,
                state.expectedToSend
            )
        }
        if sentDelta > 0 {
            work.append { [core] session in
                guard let session, let delegate = core.taskDelegate else {
                    return
                }
                delegate.urlSession(
                    session,
                    task: self,
                    didSendBodyData: sentDelta,
                    totalBytesSent: sent,
                    totalBytesExpectedToSend: expectedToSend
                )
            }
        }
        if receivedDelta > 0, kind == .download, case .delegate = sink, core.isDownloadDelegate,
            let downloadTask = self as? DownloadTask
        {
            work.append { [core] session in
                guard let session, let delegate = core.delegate as? any SessionDownloadDelegate else {
                    return
                }
                delegate.urlSession(
                    session,
                    downloadTask: downloadTask,
                    didWriteData: receivedDelta,
                    totalBytesWritten: received,
                    totalBytesExpectedToWrite: expected
                )
            }
        }
    }

    // MARK: Completion

    private func transferCompleted(_ completion: EngineCompletion, hop: Int, work: inout DelegateWork) {
        let url = currentURL
        let outcome = storage.withLock { state -> Result<Void, CourierError> in
            if hop - 1 < state.hops.count && hop >= 1 {
                state.hops[hop - 1].metrics = completion.metrics
            }
            state.transfer = 0
            state.bytesOnDisk = completion.bytesOnDisk
            if let forced = state.forcedOutcome {
                return forced
            }
            if completion.succeeded {
                return .success(())
            }
            if completion.wasCancelled && state.cancelRequested {
                return .failure(CourierError(.cancelled, "cancelled", failingURL: url))
            }
            var error = CourierError(
                engineError: completion.error,
                curlCode: completion.curlCode,
                osError: completion.osError,
                message: completion.message,
                url: url
            )
            if error.code == .timedOut, let deadline = state.resourceDeadline, Date() >= deadline {
                error.message = "the resource timeout expired"
            }
            return .failure(error)
        }
        complete(outcome, work: &work)
    }

    private func retiredHopCompleted(_ hop: Int, completion: EngineCompletion, work: inout DelegateWork) {
        let pending = storage.withLock { state -> Result<Void, CourierError>? in
            guard state.retiredHops.remove(hop) != nil else {
                return nil
            }
            if hop >= 1 && hop - 1 < state.hops.count {
                state.hops[hop - 1].metrics = completion.metrics
            }
            guard state.retiredHops.isEmpty, let outcome = state.pendingOutcome else {
                return nil
            }
            state.pendingOutcome = nil
            return outcome
        }
        if let pending {
            finalize(pending, work: &work)
        }
    }

    /// Ends the task with `outcome`, once every retired hop reported its COMPLETE (so no engine write to the
    /// staging file can still be pending and every hop's metrics are in).
    func complete(_ outcome: Result<Void, CourierError>, work: inout DelegateWork) {
        let now = storage.withLock { state -> Bool in
            guard state.phase != .completed else {
                return false
            }
            if state.retiredHops.isEmpty {
                return true
            }
            state.phase = .finishing
            state.pendingOutcome = outcome
            return false
        }
        if now {
            finalize(outcome, work: &work)
        }
    }
}
