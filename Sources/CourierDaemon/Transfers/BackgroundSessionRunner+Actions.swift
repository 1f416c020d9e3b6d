import Courier
import Foundation

/// Driving the tasks' machines: one input at a time under the runner's lock, the actions carried out after it.
extension BackgroundSessionRunner {
    /// Gives `input` to the machine of the task whose attempt is `task` (nothing when it is not a current attempt);
    /// returns the actions carried out.
    @discardableResult
    func drive(
        attemptOf task: SessionTask,
        ended end: TaskEnd? = nil,
        _ input: (inout BackgroundTaskMachine, _ stopping: Bool) -> [BackgroundTaskAction]
    ) -> [BackgroundTaskAction] {
        guard let identifier = state.withLock({ $0.journalIdentifiers[task.taskIdentifier] }) else {
            return []
        }
        return drive(identifier, ended: end, input)
    }

    /// Gives `input` to the machine of task `identifier` (with whether courierd is stopping), then carries out the
    /// actions it returned, in order, with no lock held. An attempt the machine neither starts nor runs any more is
    /// forgotten (later calls of its session task are ignored); a finished machine is dropped (the journal keeps the
    /// task until its events are acknowledged). `end`: how the attempt ended, with a finished download's file.
    /// Returns the actions carried out.
    @discardableResult
    func drive(
        _ identifier: Int,
        ended end: TaskEnd? = nil,
        _ input: (inout BackgroundTaskMachine, _ stopping: Bool) -> [BackgroundTaskAction]
    ) -> [BackgroundTaskAction] {
        let outcome = state.withLock {
            state -> (actions: [BackgroundTaskAction], task: JournaledTask, attempt: SessionTask?, finished: Bool)? in
            guard let cell = state.machines[identifier] else {
                return nil
            }
            let attempt = state.attempts[identifier]
            let actions = input(&cell.machine, state.stopping)
            let phase = cell.machine.phase
            // Kept while starting too: an input that comes between the attempt's registration and `attemptMade`
            // (a command from another thread) must not drop the attempt about to run.
            if let attempt, phase != .running, phase != .starting {
                state.attempts[identifier] = nil
                state.journalIdentifiers[attempt.taskIdentifier] = nil
            }
            if phase == .finished {
                state.machines[identifier] = nil
                state.unjournaledEnds[identifier] = cell.machine.progress
            }
            return (actions, cell.machine.journaled, attempt, phase == .finished)
        }
        guard let outcome else {
            return []
        }
        for action in outcome.actions {
            carryOut(action, for: outcome.task, attempt: outcome.attempt, ended: end)
        }
        if outcome.finished, !outcome.actions.contains(where: \.isFinishDownload) {
            // Its end is journaled (a download's is, later, by journalFinishes).
            state.withLock { $0.unjournaledEnds[identifier] = nil }
        }
        return outcome.actions
    }

    private func carryOut(
        _ action: BackgroundTaskAction,
        for task: JournaledTask,
        attempt: SessionTask?,
        ended end: TaskEnd?
    ) {
        let identifier = task.identifier
        switch action {
        case .makeAttempt(let journaled):
            queueAttempt(journaled)
        case .runAttempt:
            if let attempt {
                runWhenSlotFree(attempt, of: identifier, priority: task.spec.priority)
            }
        case .resumeAttempt:
            attempt?.resume()
        case .discardAttempt:
            attempt?.cancel()
        case .suspendAttempt:
            attempt?.suspend()
        case .cancelAttempt(let keepingResumeData):
            if keepingResumeData, let download = attempt as? DownloadTask {
                download.cancel(byProducingResumeData: { _ in })
            } else {
                attempt?.cancel()
            }
        case .wake(let date):
            wakes.add(identifier, at: date)
        case .launch:
            launch(identifier)
        case .journalState(let journaledState):
            try? journal.setState(journaledState, session: self.identifier, task: identifier)
        case .checkpoint(let checkpoint, let progress):
            journalCheckpoint(checkpoint, progress: progress, of: task, attempt: attempt)
        case .keepForNextAttempt(let checkpoint, let resumeData, let retry):
            if retry != nil {
                settings.counters.retried()
            }
            keepForNextAttempt(checkpoint, resumeData: resumeData, retry: retry, of: identifier)
        case .record(let event):
            record { () throws(JournalError) in
                [try journal.appendEvent(event, task: identifier, session: self.identifier)]
            }
        case .finishDownload(let leading, let completion, let length):
            settings.counters.ended(completion)
            finishDownload(
                task,
                leading: leading,
                completion: completion,
                location: end?.file,
                length: length,
                digest: end?.fileDigest
            )
        case .finish(let events):
            events.last.map(settings.counters.ended)
            flushResumeData(of: events)
            record { () throws(JournalError) in
                try journal.finish(session: self.identifier, task: identifier, events: events, file: nil)
            }
            if task.spec.kind == .upload, let upload = task.spec.uploadFile, upload.hasPrefix(paths.uploads.path + "/")
            {
                // Once the end is on disk: a power cut before would leave a task that needs the file.
                journal.sync()
                try? FileManager.default.removeItem(atPath: upload)
            }
        case .rewriteTask(let spec):
            do {
                try journal.replaceSpec(spec, session: self.identifier, task: identifier)
            } catch {
                logger.error(
                    "a task's new spec was not journaled",
                    metadata: ["session": "\(self.identifier)", "task": "\(identifier)", "error": "\(error)"]
                )
            }
        }
    }

    /// A completion that hands the app resume data (a cancel that produced it, a failure it can go on from) names a
    /// partial file the app may keep for later, across a power cut: the file and its directory are flushed before the
    /// completion is journaled.
    private func flushResumeData(of events: [IPCMessage.BackgroundEvent]) {
        for event in events {
            guard case .complete(let completion) = event.payload, let resumeData = completion.error?.resumeData,
                let partial = PartialDownload(resumeData: resumeData, directory: paths.partials)
            else {
                continue
            }
            _ = DurableFile.sync(partial.file)
            DurableDirectory.sync((partial.file as NSString).deletingLastPathComponent)
        }
    }

    /// Journals how far the attempt got: its partial file and the entity's response are added to the machine's
    /// counters; with `progress`, the progress since the app was last told, as one coalesced event.
    ///
    /// The file's bytes are flushed first and claimed durable (``TransferCheckpoint/durableBytes``), except at a new
    /// file's first checkpoint (an attempt's first progress): its few bytes are not worth an `fsync` on the path every
    /// task's events take, and it claims none (after a power cut before the next checkpoint the download starts from
    /// zero). A new name is flushed with the checkpoint's commit (``Journal/namedFile(in:)``); one an earlier
    /// checkpoint named is on disk already.
    private func journalCheckpoint(
        _ counters: TransferCheckpoint,
        progress: IPCMessage.BackgroundEvent?,
        of task: JournaledTask,
        attempt: SessionTask?
    ) {
        let identifier = task.identifier
        var checkpoint = counters
        checkpoint.boot = BootIdentifier.current
        if let upload = attempt as? UploadTask, let resource = upload.resumableUploadResource {
            checkpoint.uploadResource = resource.absoluteString
        }
        var newName: String?
        if let download = attempt as? DownloadTask, let partial = download.partialDownload() {
            checkpoint.partial = partial
            let earlier = task.checkpoint
            let named = earlier?.partial?.file == partial.file
            if named || (earlier?.durableBytes ?? 0) > 0 {
                checkpoint.durableBytes = min(DurableFile.sync(partial.file) ?? 0, partial.bytesOnDisk)
            }
            if !named {
                newName = (partial.file as NSString).deletingLastPathComponent
            }
        }
        record { () throws(JournalError) in
            if let newName {
                journal.namedFile(in: newName)
            }
            let event = try journal.checkpoint(
                checkpoint,
                session: self.identifier,
                task: identifier,
                progress: progress
            )
            return event.map { [$0] } ?? []
        }
        drive(identifier) { machine, _ in
            machine.checkpointed(checkpoint, reportingProgress: progress != nil)
            return []
        }
    }

    /// Keeps an ended attempt's partial file (from its resume data, flushed) as the next attempt's checkpoint, and
    /// journals the retry time when there is one.
    private func keepForNextAttempt(
        _ base: TransferCheckpoint,
        resumeData: Data?,
        retry: BackgroundTaskAction.Retry?,
        of identifier: Int
    ) {
        let partial = resumeData.flatMap { PartialDownload(resumeData: $0, directory: paths.partials) }
        var checkpoint = base
        checkpoint.partial = partial
        checkpoint.received = partial?.bytesOnDisk ?? 0
        checkpoint.durableBytes = min(partial.flatMap { DurableFile.sync($0.file) } ?? 0, partial?.bytesOnDisk ?? 0)
        checkpoint.boot = BootIdentifier.current
        drive(identifier) { machine, _ in
            machine.kept(checkpoint)
            return []
        }
        do {
            try journal.checkpoint(checkpoint, session: self.identifier, task: identifier)
            if let retry {
                try journal.scheduleRetry(
                    session: self.identifier,
                    task: identifier,
                    attempts: retry.attempts,
                    at: retry.at
                )
            }
        } catch {
            logger.error("checkpoint not journaled", metadata: ["task": "\(identifier)", "error": "\(error)"])
        }
    }

    /// Moves the finished download (`length` bytes, as `task(_:ended:)` found it; -1: not found) under the downloads
    /// directory, then journals `leading`, `downloaded` and `completion` in one transaction (or `completion` with why
    /// the file could not move). A file the engine hashed (`digest`) moves with its bytes unflushed (its name is
    /// flushed: it is how courierd finds the file again): the transaction records it as an ``UnsyncedFile`` and the
    /// ``FileFlusher`` flushes it in a later batch; any other is flushed before it is journaled. A file that cannot
    /// move is deleted (the attempt's task leaves it to this: ``task(_:ended:)``).
    private func finishDownload(
        _ task: JournaledTask,
        leading: [IPCMessage.BackgroundEvent],
        completion: IPCMessage.BackgroundEvent,
        location: URL?,
        length: Int64,
        digest: Checksum?
    ) {
        let identifier = task.identifier
        var events = leading
        var file: String?
        var unsynced: UnsyncedFile?
        do {
            guard let location else {
                throw CourierError(.cannotMoveFile, "the finished download's file is not known")
            }
            // A path, not a URL: `appendingPathComponent` parses and checks the whole URL again (2 % of courierd's
            // W6 samples).
            let destination = downloadsPath + "/" + UniqueFileName.make() + ".download"
            if let digest, let boot = BootIdentifier.current, length >= 0 {
                unsynced = UnsyncedFile(
                    path: destination,
                    session: self.identifier,
                    task: identifier,
                    length: length,
                    digest: digest,
                    boot: boot
                )
            }
            // A file handed over unflushed (``UnsyncedFile``) has its name flushed with the journal's commit that
            // names it, in one `fsync` of the directory for many; a power cut that keeps the commit and loses the name
            // finds the file missing at the next start, as one whose bytes were lost, and runs the task again.
            try DurableFile.move(location.path, to: destination, flushing: unsynced == nil) {
                // Made at the first download, and again if something removed it.
                try DurableDirectory.make(paths.downloads)
            }
            if unsynced != nil {
                journal.namedFile(in: downloadsPath)
            }
            file = destination
            let downloaded = IPCMessage.BackgroundEvent(
                .downloaded(path: destination),
                progress: completion.progress
            )
            events += [downloaded, completion]
        } catch {
            location.map(FileManager.default.removeFile)
            var failed = completion
            failed.payload = .complete(
                TransferCompletion(
                    error: (error as? CourierError) ?? CourierError(.cannotMoveFile, "\(error)"),
                    metrics: completion.completion?.metrics ?? TransferMetrics()
                )
            )
            events.append(failed)
        }
        queueFinish(Journal.Finish(task: identifier, events: events, file: file, unsynced: unsynced))
    }

    /// Journals `finish` with the other downloads that ended in the same batch of the engine's reports, in one
    /// transaction, once the batch was handed over: an operation on the session's delegate queue, which runs after
    /// the batch (the queue is serial). Until then courierd has not said the task ended, to anyone.
    private func queueFinish(_ finish: Journal.Finish) {
        let first = state.withLock { state in
            state.finishes.append(finish)
            return state.finishes.count == 1
        }
        guard first else {
            return
        }
        if let queue = session?.delegateQueue {
            queue.addOperation { [self] in journalFinishes() }
        } else {
            journalFinishes()
        }
    }

    /// Journals the downloads' ends ``queueFinish(_:)`` gathered (courierd's stop calls it too), then hands the
    /// unflushed files to the ``FileFlusher``.
    func journalFinishes() {
        let finishes = state.withLock { state in
            defer { state.finishes = [] }
            return state.finishes
        }
        guard !finishes.isEmpty else {
            return
        }
        record { () throws(JournalError) in
            let (events, refused) = try journal.finish(session: self.identifier, finishes)
            for (task, error) in refused {
                logger.error(
                    "a task's end was not journaled",
                    metadata: ["session": "\(self.identifier)", "task": "\(task)", "error": "\(error)"]
                )
            }
            return events
        }
        state.withLock { state in
            for finish in finishes {
                state.unjournaledEnds[finish.task] = nil
            }
        }
        for finish in finishes {
            if let unsynced = finish.unsynced {
                flusher.enqueue(unsynced.path)
            }
        }
    }
}

extension BackgroundSessionRunner {
    /// Resumes `attempt` once courierd's ``TransferSlots`` give it a slot (at once when one is free); a higher-priority
    /// attempt may later preempt it.
    fileprivate func runWhenSlotFree(_ attempt: SessionTask, of identifier: Int, priority: Float) {
        settings.slots.request(
            TransferSlots.Claim(
                attempt: ObjectIdentifier(attempt),
                priority: priority,
                start: { [weak self, weak attempt] in
                    guard let self, let attempt else {
                        return
                    }
                    // Suspended by its app while it waited: it keeps the slot, and runs when resumed.
                    let suspended = self.state.withLock { $0.machines[identifier]?.machine.userSuspended ?? false }
                    if !suspended {
                        attempt.resume()
                    }
                },
                preempt: { [weak self, weak attempt] in
                    guard let self, let attempt else {
                        return
                    }
                    self.logger.info(
                        "preempted for a task of higher priority",
                        metadata: ["session": "\(self.identifier)", "task": "\(identifier)"]
                    )
                    self.drive(attemptOf: attempt) { machine, _ in machine.preempt() }
                }
            )
        )
    }
}

extension BackgroundTaskAction {
    /// A download's end, journaled later with its batch (``BackgroundSessionRunner/journalFinishes()``).
    var isFinishDownload: Bool {
        if case .finishDownload = self { true } else { false }
    }
}
