import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Starting an attempt of a journaled task: when it may start (its retry time, the machine's conditions) and from
/// where (a fresh request, the app's resume data, or the partial file of the last checkpoint).
extension BackgroundSessionRunner {
    /// Starts the task's next attempt now if nothing holds it back; otherwise notes why and looks again later.
    func launch(_ identifier: Int) {
        let now = Date()
        let requirements = state.withLock { state in
            TransferRequirements(
                isDiscretionary: state.configuration.isDiscretionary,
                allowsExpensiveNetworkAccess: state.configuration.allowsExpensiveNetworkAccess,
                createdInBackground: state.live[identifier]?.journaled.spec.createdInBackground == true
            )
        }
        let conditionsWait = requirements.waitingReason(under: settings.conditions.read())
        enum Next {
            case nothing
            case wait(until: Date)
            case start(JournaledTask)
            case cancelled
        }
        let next = state.withLock { state -> Next in
            guard !state.stopping, var live = state.live[identifier], live.task == nil, !live.finished else {
                return .nothing
            }
            switch live.ending {
            case .cancel, .cancelProducingResumeData:
                // Cancelled while its last attempt was ending into a retry: nothing runs that could end it now.
                return .cancelled
            case .daemonStopping:
                return .nothing
            case nil:
                break
            }
            if live.userSuspended {
                live.waitingReason = nil
                state.live[identifier] = live
                return .nothing
            }
            if let startAfter = live.journaled.spec.startAfter, startAfter > now {
                live.waitingReason = "created in the background: waits for the app's relaunch delay until "
                    + ISO8601DateFormatter().string(from: startAfter)
                state.live[identifier] = live
                return .wait(until: startAfter)
            }
            if let retryAt = live.journaled.retryAt, retryAt > now {
                live.waitingReason = "retrying at \(ISO8601DateFormatter().string(from: retryAt))"
                state.live[identifier] = live
                return .wait(until: retryAt)
            }
            if let conditionsWait {
                live.waitingReason = conditionsWait
                state.live[identifier] = live
                return .wait(until: now.addingTimeInterval(settings.conditionPollInterval))
            }
            live.waitingReason = nil
            state.live[identifier] = live
            return .start(live.journaled)
        }
        switch next {
        case .nothing:
            return
        case .wait(let date):
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, date.timeIntervalSinceNow)) { [self] in
                self.launch(identifier)
            }
        case .start(let journaled):
            start(journaled)
        case .cancelled:
            finish(identifier, events: [.completed(error: CourierError(.cancelled, "cancelled"))], file: nil)
        }
    }

    private func start(_ journaled: JournaledTask) {
        guard let session else {
            return
        }
        let identifier = journaled.identifier
        let task = makeTask(for: journaled, in: session)
        task.taskDescription = journaled.spec.taskDescription
        task.priority = journaled.spec.priority
        let started = state.withLock { state -> Bool in
            guard var live = state.live[identifier], live.task == nil, !state.stopping else {
                return false
            }
            live.task = task
            live.attemptCheckpointed = false
            live.checkpointedAt = Date()
            live.checkpointedBytes = live.received
            state.live[identifier] = live
            state.journalIdentifiers[task.taskIdentifier] = identifier
            return true
        }
        guard started else {
            task.cancel()
            return
        }
        try? journal.setState(.running, session: self.identifier, task: identifier)
        task.resume()
        // A resumed download has moved its partial file into the session's staging directory: say where at once,
        // so that a crash before the next checkpoint does not lose it.
        if journaled.checkpoint?.partial != nil || journaled.spec.resumeData != nil {
            checkpoint(identifier, journalingProgress: false)
        }
    }

    private func makeTask(for journaled: JournaledTask, in session: Session) -> SessionTask {
        var request = journaled.spec.request.urlRequest
        let identifier = journaled.identifier
        switch journaled.spec.kind {
        case .upload:
            let file = URL(fileURLWithPath: journaled.spec.uploadFile ?? "")
            // Strong: the handler is released with the task, which the runner's session ends.
            return session.uploadTask(with: request, fromFile: file) { [self] body, _, error in
                self.uploadEnded(identifier, body: body, error: error)
            }
        case .download:
            if let resumeData = resumeData(for: journaled) {
                return session.downloadTask(withResumeData: resumeData)
            }
            // Resuming needs the bytes of the entity itself: a background download asks for no content coding
            // unless the app chose one.
            if request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
                request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
            }
            return session.downloadTask(with: request)
        }
    }

    /// Resume data for the next attempt of a download: from the last checkpoint's partial file, or the app's resume
    /// data for a first attempt; nil to start from zero.
    private func resumeData(for journaled: JournaledTask) -> Data? {
        if let checkpoint = journaled.checkpoint, let partial = checkpoint.partial {
            guard let length = FileManager.default.fileLength(atPath: partial.file) else {
                logger.notice(
                    "partial file gone; the download starts again from zero",
                    metadata: ["session": "\(identifier)", "task": "\(journaled.identifier)", "file": "\(partial.file)"]
                )
                return nil
            }
            let bytes = checkpoint.trustedPrefix(fileLength: length)
            return partial.resumeData(movingFileInto: paths.partials, bytesOnDisk: bytes)
        }
        return journaled.spec.resumeData
    }

    /// A partial file left in the staging directory of an earlier run moves to the partial directory, and the
    /// checkpoint says so, before that run's staging directories are deleted.
    func adoptPartialFile(of task: inout JournaledTask) {
        guard var checkpoint = task.checkpoint, var partial = checkpoint.partial,
            partial.file.hasPrefix(paths.staging.path + "/")
        else {
            return
        }
        let destination = paths.partials.appendingPathComponent("courier-\(UUID().uuidString).partial")
        do {
            try FileManager.default.createDirectory(at: paths.partials, withIntermediateDirectories: true)
            try DurableFile.move(URL(fileURLWithPath: partial.file), to: destination)
        } catch {
            logger.notice(
                "partial file not adopted; the download starts again from zero",
                metadata: ["session": "\(identifier)", "task": "\(task.identifier)", "error": "\(error)"]
            )
            // Forgotten in the journal too, so that the next start does not look for it again.
            task.checkpoint = nil
            task.bytesOnDisk = 0
            try? journal.clearCheckpoint(session: identifier, task: task.identifier)
            return
        }
        partial.file = destination.path
        checkpoint.partial = partial
        task.checkpoint = checkpoint
        _ = try? journal.checkpoint(checkpoint, session: identifier, task: task.identifier)
    }
}
