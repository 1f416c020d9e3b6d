package import Courier
package import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The daemon session's delegate calls, turned into checkpoints and journaled events for the app.
extension BackgroundSessionRunner {
    // MARK: Progress

    package func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        progressed(downloadTask) { live in
            live.received = totalBytesWritten
            live.expectedToReceive = totalBytesExpectedToWrite
        }
    }

    package func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        progressed(task) { live in
            live.sent = totalBytesSent
            live.expectedToSend = totalBytesExpectedToSend
        }
    }

    package func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        guard let identifier = journalIdentifier(of: downloadTask) else {
            return
        }
        state.withLock { state in
            state.live[identifier]?.received = fileOffset
            state.live[identifier]?.reportedReceived = fileOffset
            state.live[identifier]?.expectedToReceive = expectedTotalBytes
        }
        record { () throws(JournalError) in
            [
                try journal.appendEvent(
                    .resumed(offset: fileOffset, expectedTotal: expectedTotalBytes),
                    task: identifier,
                    session: self.identifier
                )
            ]
        }
        // The validator and offset of the new response: checkpointed before more bytes arrive.
        checkpoint(identifier, journalingProgress: false)
    }

    /// Updates the counters; checkpoints when enough bytes or time passed since the last checkpoint.
    private func progressed(_ task: SessionTask, _ update: (inout Live) -> Void) {
        guard let identifier = journalIdentifier(of: task) else {
            return
        }
        let now = Date()
        let due = state.withLock { state -> Bool in
            guard var live = state.live[identifier] else {
                return false
            }
            update(&live)
            state.live[identifier] = live
            let moved = live.received + live.sent - live.checkpointedBytes
            return !live.attemptCheckpointed || moved >= settings.checkpointBytes
                || now.timeIntervalSince(live.checkpointedAt) >= settings.checkpointInterval
        }
        if due {
            checkpoint(identifier, journalingProgress: true)
        }
    }

    /// Journals how far the task got (flushing a download's partial file first) and, with `journalingProgress`, the
    /// progress since the app was last told, as one coalesced event.
    func checkpoint(_ identifier: Int, journalingProgress: Bool) {
        guard let (task, live) = state.withLock({ state in state.live[identifier].flatMap { live in live.task.map { ($0, live) } } })
        else {
            return
        }
        var checkpoint = TransferCheckpoint(
            received: live.received,
            expectedToReceive: live.expectedToReceive,
            sent: live.sent,
            expectedToSend: live.expectedToSend
        )
        if let download = task as? DownloadTask {
            checkpoint.entity = live.journaled.checkpoint?.entity ?? download.receivedResponse.flatMap(EntityResponse.remembered)
            if let partial = download.partialDownload() {
                checkpoint.partial = partial
                checkpoint.durableBytes = min(DurableFile.sync(partial.file) ?? 0, partial.bytesOnDisk)
            }
        }
        let progress = journalingProgress ? progressEvent(live) : nil
        record { () throws(JournalError) in
            let event = try journal.checkpoint(checkpoint, session: self.identifier, task: identifier, progress: progress)
            return event.map { [$0] } ?? []
        }
        state.withLock { state in
            guard var live = state.live[identifier] else {
                return
            }
            live.journaled.checkpoint = checkpoint
            live.attemptCheckpointed = true
            live.checkpointedAt = checkpoint.at
            live.checkpointedBytes = checkpoint.received + checkpoint.sent
            if progress != nil {
                live.reportedReceived = checkpoint.received
                live.reportedSent = checkpoint.sent
            }
            state.live[identifier] = live
        }
    }

    /// The coalesced progress the app has not heard of, or nil.
    private func progressEvent(_ live: Live) -> IPCMessage.BackgroundEvent? {
        if live.journaled.spec.kind == .upload {
            guard live.sent != live.reportedSent else {
                return nil
            }
            return .sentBodyData(delta: live.sent - live.reportedSent, total: live.sent, expected: live.expectedToSend)
        }
        guard live.received != live.reportedReceived else {
            return nil
        }
        return .wroteData(
            delta: live.received - live.reportedReceived,
            total: live.received,
            expected: live.expectedToReceive
        )
    }

    // MARK: Endings

    /// The download succeeded: the file is flushed and moved under the daemon's downloads directory, then its
    /// events (`response`, `finishedDownloading`, `completed`) are journaled in one transaction, then announced.
    package func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        guard let identifier = journalIdentifier(of: downloadTask),
            let live = state.withLock({ $0.live[identifier] }), !live.finished
        else {
            return
        }
        let destination = paths.downloads.appendingPathComponent("\(UUID().uuidString).download")
        var events: [IPCMessage.BackgroundEvent] = []
        if let progress = progressEvent(live) {
            events.append(progress)
        }
        if let received = downloadTask.receivedResponse {
            let length = FileManager.default.fileLength(atPath: location.path) ?? -1
            events.append(
                .response(EntityResponse.reported(final: received, entity: live.journaled.checkpoint?.entity, length: length))
            )
        }
        var file: String?
        do {
            try FileManager.default.createDirectory(at: paths.downloads, withIntermediateDirectories: true)
            try DurableFile.move(location, to: destination)
            file = destination.path
            events.append(.finishedDownloading(path: destination.path))
            events.append(.completed(error: nil))
        } catch {
            let failure = (error as? CourierError) ?? CourierError(.cannotMoveFile, "\(error)")
            events.append(.completed(error: failure))
        }
        finish(identifier, events: events, file: file)
    }

    package func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        guard let identifier = journalIdentifier(of: task) else {
            return
        }
        end(identifier, error: error, response: task.receivedResponse)
    }

    /// An upload's completion handler.
    func uploadEnded(_ identifier: Int, body: Data?, error: (any Error)?) {
        let live = state.withLock { $0.live[identifier] }
        let received = live?.task?.receivedResponse
        guard error == nil else {
            end(identifier, error: error, response: received)
            return
        }
        guard let live, !live.finished else {
            return
        }
        var events: [IPCMessage.BackgroundEvent] = []
        if let progress = progressEvent(live) {
            events.append(progress)
        }
        if let received {
            events.append(.response(received))
        }
        if let body, !body.isEmpty {
            events.append(.receivedData(body.prefix(IPCMessage.BackgroundEvent.maximumBodyLength)))
        }
        events.append(.completed(error: nil))
        finish(identifier, events: events, file: nil)
    }

    /// An attempt ended without success (or a download ended after its file was handed over): a retry, the
    /// task's end, or (courierd stopping) a checkpoint to resume from at the next start.
    func end(_ identifier: Int, error: (any Error)?, response: IPCMessage.BackgroundResponse?) {
        guard let live = state.withLock({ $0.live[identifier] }), !live.finished else {
            return
        }
        let failure = (error as? CourierError) ?? CourierError(.unknown, error.map { "\($0)" } ?? "no error")
        switch live.ending {
        case .daemonStopping:
            keepForNextAttempt(identifier, resumeData: failure.resumeData, response: response, attempts: nil, retryAt: nil)
            return
        case .cancel, .cancelProducingResumeData:
            var cancelled = failure
            cancelled.code = .cancelled
            finish(identifier, events: [.completed(error: cancelled)], file: nil)
            return
        case nil:
            break
        }
        let attempt = live.journaled.attempts + 1
        let deadline = live.journaled.createdAt.addingTimeInterval(state.withLock { $0.configuration.resourceTimeout })
        switch settings.retryPolicy.decide(after: failure, attempt: attempt, now: Date(), deadline: deadline) {
        case .retry(let date):
            logger.info(
                "transfer failed; retrying",
                metadata: [
                    "session": "\(self.identifier)", "task": "\(identifier)", "attempt": "\(attempt)",
                    "error": "\(failure)", "at": "\(date)",
                ]
            )
            keepForNextAttempt(
                identifier,
                resumeData: failure.resumeData,
                response: response,
                attempts: attempt,
                retryAt: date
            )
            launch(identifier)
        case .fail(let error):
            var events: [IPCMessage.BackgroundEvent] = []
            if let response {
                events.append(.response(response))
            }
            events.append(.completed(error: error))
            finish(identifier, events: events, file: nil)
        }
    }

    /// Keeps a failed attempt's partial file (from its resume data) and the entity's response (from `response`, unless
    /// an earlier attempt gave one) as the checkpoint of the next attempt, and journals the retry time when there is
    /// one.
    private func keepForNextAttempt(
        _ identifier: Int,
        resumeData: Data?,
        response: IPCMessage.BackgroundResponse?,
        attempts: Int?,
        retryAt: Date?
    ) {
        let partial = resumeData.flatMap { PartialDownload(resumeData: $0, directory: paths.partials) }
        // Flushed before the lock is taken: no disk I/O under it.
        let flushed = partial.flatMap { DurableFile.sync($0.file) } ?? 0
        let checkpoint = state.withLock { state -> TransferCheckpoint? in
            guard var live = state.live[identifier] else {
                return nil
            }
            if let task = live.task {
                state.journalIdentifiers[task.taskIdentifier] = nil
            }
            live.task = nil
            let checkpoint = TransferCheckpoint(
                received: partial?.bytesOnDisk ?? 0,
                expectedToReceive: live.expectedToReceive,
                sent: 0,
                expectedToSend: live.expectedToSend,
                partial: partial,
                durableBytes: min(flushed, partial?.bytesOnDisk ?? 0),
                entity: live.journaled.checkpoint?.entity ?? response.flatMap(EntityResponse.remembered)
            )
            live.journaled.checkpoint = checkpoint
            live.received = checkpoint.received
            live.sent = 0
            if let attempts, let retryAt {
                live.journaled.attempts = attempts
                live.journaled.retryAt = retryAt
            }
            state.live[identifier] = live
            return checkpoint
        }
        guard let checkpoint else {
            return
        }
        do {
            try journal.checkpoint(checkpoint, session: self.identifier, task: identifier)
            if let attempts, let retryAt {
                try journal.scheduleRetry(session: self.identifier, task: identifier, attempts: attempts, at: retryAt)
            }
        } catch {
            logger.error("checkpoint not journaled", metadata: ["task": "\(identifier)", "error": "\(error)"])
        }
    }

    /// Journals the task's last events, once, and forgets it (a later call of its session task is ignored); its
    /// upload copy goes.
    func finish(_ identifier: Int, events: [IPCMessage.BackgroundEvent], file: String?) {
        let claimed = state.withLock { state -> JournaledTask? in
            guard var live = state.live[identifier], !live.finished else {
                return nil
            }
            live.finished = true
            state.live[identifier] = live
            return live.journaled
        }
        guard let journaled = claimed else {
            return
        }
        record { () throws(JournalError) in
            try journal.finish(session: self.identifier, task: identifier, events: events, file: file)
        }
        if journaled.spec.kind == .upload, let upload = journaled.spec.uploadFile,
            upload.hasPrefix(paths.uploads.path + "/")
        {
            try? FileManager.default.removeItem(atPath: upload)
        }
        forget(identifier)
    }

    /// Drops a finished task from the live table (the journal keeps it until its events are acknowledged).
    private func forget(_ identifier: Int) {
        state.withLock { state in
            if let task = state.live[identifier]?.task {
                state.journalIdentifiers[task.taskIdentifier] = nil
            }
            state.live[identifier] = nil
        }
    }

    private func journalIdentifier(of task: SessionTask) -> Int? {
        state.withLock { $0.journalIdentifiers[task.taskIdentifier] }
    }
}
