import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Starting an attempt of a journaled task: when it may start (the machine decides, from its retry time and the
/// machine's conditions read here) and from where (a fresh request, the app's resume data, or the partial file of the
/// last checkpoint).
extension BackgroundSessionRunner {
    /// Gives the task's machine a look at starting its next attempt, with the conditions as they are now.
    func launch(_ identifier: Int) {
        launch([identifier])
    }

    /// ``launch(_:)`` for each of `identifiers` (the tasks a wake found due), with the conditions read once.
    func launch(_ identifiers: [Int]) {
        let conditions = settings.conditions.read()
        for identifier in identifiers {
            launch(identifier, under: conditions)
        }
    }

    private func launch(_ identifier: Int, under conditions: TransferConditions) {
        let looked = state.withLock { state in
            state.machines[identifier].map { cell in
                (
                    TransferRequirements(
                        isDiscretionary: state.configuration.isDiscretionary,
                        allowsExpensiveNetworkAccess: state.configuration.allowsExpensiveNetworkAccess,
                        createdInBackground: cell.machine.journaled.spec.createdInBackground == true,
                        expectedBytes: cell.machine.journaled.spec.spec.task?.clientExpectedBytes
                    ),
                    state.sink != nil,
                    cell.machine.spaceNeeded
                )
            }
        }
        guard let (requirements, appListening, spaceNeeded) = looked else {
            return
        }
        let spaceWait = spaceNeeded.flatMap { needed in
            StorageSpace.waitingReason(
                needed: needed,
                available: StorageSpace.available(at: paths.staging),
                at: paths.stateDirectory
            )
        }
        let conditionsWait = spaceWait ?? requirements.waitingReason(under: conditions)
        drive(identifier) { machine, stopping in
            machine.launch(conditionsWait: conditionsWait, appListening: appListening, stopping: stopping, now: Date())
        }
    }

    /// How long attempts asked for one after another wait to be made together, in ``StartOrder``: the tasks an app
    /// creates in a burst (one `createTask` each) or that courierd restores at its start reach the engine, which
    /// starts each priority level's queue in order, smaller ones first.
    static let startGathering: DispatchTimeInterval = .milliseconds(20)

    /// Queues the attempt of a task whose machine asked for one; the queue is made in ``StartOrder`` a moment later.
    func queueAttempt(_ journaled: JournaledTask) {
        let first = state.withLock { state in
            state.startQueue.append(journaled)
            return state.startQueue.count == 1
        }
        guard first else {
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.startGathering) { [self] in
            let queued = state.withLock { state in
                defer { state.startQueue = [] }
                return state.startQueue
            }
            for journaled in queued.sorted(by: StartOrder.startsBefore) {
                makeAttempt(journaled)
            }
        }
    }

    /// Makes the session task of the task's next attempt and tells its machine (which runs or discards it).
    func makeAttempt(_ journaled: JournaledTask) {
        guard let session else {
            return
        }
        let identifier = journaled.identifier
        let task = makeTask(for: journaled, in: session)
        task.taskDescription = journaled.spec.taskDescription
        task.priority = journaled.spec.priority
        let registered = state.withLock { state -> Bool in
            // Gone when it finished meanwhile (the session was invalidated, the app force-quit).
            guard state.machines[identifier] != nil else {
                return false
            }
            state.attempts[identifier] = task
            state.journalIdentifiers[task.taskIdentifier] = identifier
            return true
        }
        guard registered else {
            task.cancel()
            return
        }
        drive(identifier) { machine, stopping in
            machine.attemptMade(stopping: stopping, now: Date())
        }
    }

    private func makeTask(for journaled: JournaledTask, in session: Session) -> SessionTask {
        let task = makeBareTask(for: journaled, in: session)
        // courierd checks the file before the app hears of it; any other file is hashed too, to be handed over before
        // it is flushed (``UnsyncedFile``).
        (task as? DownloadTask)?.expectedChecksum = journaled.spec.spec.task?.expectedChecksum
        (task as? DownloadTask)?.fileDigestAlgorithm = .crc32c
        task.maximumBytesPerSecond = journaled.spec.spec.task?.maximumBytesPerSecond
        (task as? DownloadTask)?.maximumSegments = journaled.spec.spec.task?.maximumSegments
        return task
    }

    /// The attempt's task, made from the journaled spec as the app's task built it (its header lines, proxy and
    /// HTTP/2 setting go on the wire as they are: ``SessionTask/follow(_:in:)``).
    private func makeBareTask(for journaled: JournaledTask, in session: Session) -> SessionTask {
        let request = journaled.spec.attemptRequest
        let template = journaled.spec.spec
        switch journaled.spec.kind {
        case .upload:
            let file = URL(fileURLWithPath: journaled.spec.uploadFile ?? "")
            let upload = session.observedUpload(request, file: file, template: template, observer: self)
            // An earlier attempt's server kept part of the body: ask it how much, and send the rest.
            if let resource = journaled.checkpoint?.uploadResource.flatMap(URL.init(string:)) {
                upload.resumeUpload(at: resource)
            }
            return upload
        case .download, .data:  // (admission refuses data tasks)
            if let resumeData = resumeData(for: journaled) {
                return session.observedDownload(resumeData: resumeData, template: template, observer: self)
            }
            return session.observedDownload(request, template: template, observer: self)
        }
    }

    /// Resume data for the next attempt of a download: from the last checkpoint's partial file, or the app's resume
    /// data for a first attempt; nil to start from zero. A task with a checkpoint never goes back to the app's resume
    /// data: its first attempt took the file over (``takeOverResumeData(of:)``) and moved it, and a checkpoint made
    /// before the attempt's response arrived names no file (after a power cut there, the app's resume data would
    /// name a file that is gone: the task would fail instead of starting again).
    private func resumeData(for journaled: JournaledTask) -> Data? {
        if let checkpoint = journaled.checkpoint ?? takeOverResumeData(of: journaled) {
            guard let partial = checkpoint.partial else {
                return nil
            }
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

    /// The app's resume data, journaled as the task's checkpoint before its partial file moves into the staging
    /// directory (the attempt's first checkpoint names it there): a crash between the move and that checkpoint then
    /// starts the download again from zero, instead of failing it with resume data whose file is gone. Nil when the
    /// task has no resume data, or its file is missing (the attempt then fails with `cannotResume`, as the app's own
    /// session would).
    private func takeOverResumeData(of journaled: JournaledTask) -> TransferCheckpoint? {
        guard let resumeData = journaled.spec.resumeData,
            let partial = PartialDownload(resumeData: resumeData, directory: paths.partials),
            let flushed = DurableFile.sync(partial.file)
        else {
            return nil
        }
        let checkpoint = TransferCheckpoint(
            received: partial.bytesOnDisk,
            partial: partial,
            durableBytes: min(flushed, partial.bytesOnDisk)
        )
        do {
            try journal.checkpoint(checkpoint, session: identifier, task: journaled.identifier)
        } catch {
            return nil
        }
        // On disk before the file moves.
        journal.sync()
        return checkpoint
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
            try DurableDirectory.make(paths.partials)
            try DurableFile.move(URL(fileURLWithPath: partial.file), to: destination)
        } catch {
            logger.notice(
                "partial file not adopted; the download starts again from zero",
                metadata: ["session": "\(identifier)", "task": "\(task.identifier)", "error": "\(error)"]
            )
            // A checkpoint that names no file, in the journal too: the next attempt starts from zero. (None at all
            // would send it back to the app's resume data, whose file an earlier attempt took: it would fail.)
            let empty = TransferCheckpoint()
            task.checkpoint = empty
            task.bytesOnDisk = 0
            _ = try? journal.checkpoint(empty, session: identifier, task: task.identifier)
            return
        }
        partial.file = destination.path
        checkpoint.partial = partial
        task.checkpoint = checkpoint
        _ = try? journal.checkpoint(checkpoint, session: identifier, task: task.identifier)
    }
}
