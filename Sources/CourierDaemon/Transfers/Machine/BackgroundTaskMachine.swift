package import Courier
package import Foundation

/// One journaled background task as courierd runs it: when an attempt starts, what a command, a failure or a stop
/// does, when to checkpoint, and what the app hears at the end. Pure, in the shape of the app's `TaskMachine`: each
/// input changes the state and returns the ``BackgroundTaskAction``s for the runner to carry out, with no lock, no
/// clock (the time comes with the input) and no I/O inside.
///
/// A task is `waiting` (for its turn, a retry, its relaunch delay, conditions, or a resume), `starting` (its attempt
/// being made), `running` one attempt, or `finished` (its last events handed to the runner). Impossible inputs (an
/// attempt made while none was asked for) are caught by assertions in debug builds and ignored in release builds.
package struct BackgroundTaskMachine: Sendable, Equatable {
    package enum Phase: Sendable, Equatable {
        case waiting
        case starting
        case running
        case finished

        /// waiting → starting → running, back to waiting (a stop, a retry), and to finished from any; nothing
        /// leaves finished.
        func allows(_ next: Phase) -> Bool {
            switch (self, next) {
            case (.waiting, .starting), (.starting, .waiting), (.starting, .running), (.running, .waiting): true
            case (.waiting, .finished), (.starting, .finished), (.running, .finished): true
            default: false
            }
        }
    }

    /// Why courierd, not the network, is ending the running attempt.
    package enum Ending: Sendable, Equatable {
        case cancel
        case cancelProducingResumeData
        /// courierd is stopping: the task stays in the journal and resumes at the next start.
        case daemonStopping
        /// A task of higher priority needed the attempt's slot (``TransferSlots``): the task waits for one again and
        /// goes on from its partial file.
        case preempted
    }

    /// The pacing the machine follows (``TransferSettings``).
    package struct Rules: Sendable, Equatable {
        package var retryPolicy: RetryPolicy
        package var checkpointInterval: TimeInterval
        package var checkpointBytes: Int64
        package var conditionPollInterval: TimeInterval

        package init(_ settings: TransferSettings) {
            retryPolicy = settings.retryPolicy
            checkpointInterval = settings.checkpointInterval
            checkpointBytes = settings.checkpointBytes
            conditionPollInterval = settings.conditionPollInterval
        }
    }

    package private(set) var journaled: JournaledTask
    package private(set) var phase: Phase = .waiting
    package private(set) var received: Int64 = 0
    package private(set) var expectedToReceive: Int64 = -1
    package private(set) var sent: Int64 = 0
    package private(set) var expectedToSend: Int64 = -1

    /// The counts above, as the events carry them.
    package var progress: TransferProgress {
        TransferProgress(
            received: received,
            expectedToReceive: expectedToReceive,
            sent: sent,
            expectedToSend: expectedToSend
        )
    }
    /// Why the task is not moving bytes, while it waits for something other than a resume (`courier tasks` says it).
    package var waitingReason: String? {
        waiting?.text
    }
    /// ``waitingReason`` as kept: a date is made text only when someone asks (a listing), not at each launch.
    private var waiting: Waiting?
    /// What the file system must have free before the next attempt: the last one ran out of space.
    package private(set) var spaceNeeded: Int64?
    package private(set) var userSuspended = false
    package private(set) var ending: Ending?
    /// What the app has been told (the totals of the journaled progress events).
    private var reportedReceived: Int64 = 0
    private var reportedSent: Int64 = 0
    private var checkpointedAt = Date.distantPast
    private var checkpointedBytes: Int64 = 0
    /// The current attempt has been checkpointed once: its first bytes are journaled at once, so that a crash right
    /// after does not restart a download from zero.
    private var attemptCheckpointed = false
    /// The entity's response as the running attempt received it, until a checkpoint keeps it.
    private var attemptEntity: IPCMessage.BackgroundResponse? {
        get { attemptEntityBox?.value }
        set { attemptEntityBox = newValue.map(Boxed.init) }
    }
    /// ``attemptEntity``, boxed: most machines never hold one (a queued task), and it is 208 bytes inline.
    private var attemptEntityBox: Boxed<IPCMessage.BackgroundResponse>?
    /// When the app was asked whether the delayed task begins (`delayedStart`), while it has not answered.
    private var delayedStartAskedAt: Date?

    /// How long courierd waits for the app's `willBeginDelayedRequest` answer before it begins the task as it is.
    package static let delayedStartAnswerTime: TimeInterval = 30
    private let rules: Rules

    /// A task the app just created (journaled already).
    package init(adding task: JournaledTask, rules: Rules) {
        journaled = task
        self.rules = rules
    }

    /// A task an earlier run of courierd journaled: it goes on from its checkpoint, suspended if it was.
    package init(restoring task: JournaledTask, rules: Rules) {
        journaled = task
        self.rules = rules
        received = task.bytesOnDisk
        reportedReceived = task.bytesOnDisk
        expectedToReceive = task.expectedLength
        userSuspended = task.state == .suspended
    }

    // MARK: Starting

    /// Whether the next attempt may start now: `conditionsWait` says why the machine's conditions hold it back (nil:
    /// they allow it); `appListening`: the session's app holds it (a delayed task asks it before it begins). Starts
    /// it, or says why not and when to look again.
    package mutating func launch(
        conditionsWait: String?,
        appListening: Bool = false,
        stopping: Bool,
        now: Date
    ) -> [BackgroundTaskAction] {
        guard !stopping, phase == .waiting else {
            return []
        }
        switch ending {
        case .cancel, .cancelProducingResumeData:
            // Cancelled while its last attempt was ending into a retry: nothing runs that could end it now.
            return finishing([completed(CourierError(.cancelled, "cancelled"))])
        case .daemonStopping, .preempted:
            return []
        case nil:
            break
        }
        if userSuspended {
            waiting = nil
            return []
        }
        if let startAfter = journaled.spec.startAfter, startAfter > now {
            waiting = .relaunchDelay(until: startAfter)
            return [.wake(at: startAfter)]
        }
        if let begin = journaled.spec.earliestBeginDate {
            if begin > now {
                waiting = .scheduled(begin)
                return [.wake(at: begin)]
            }
            guard appListening else {
                // No app to ask (courierd does not launch one for this): it begins as it is.
                return beginDelayed(with: nil)
            }
            guard let asked = delayedStartAskedAt else {
                delayedStartAskedAt = now
                waiting = .askingTheApp
                return [
                    .record(IPCMessage.BackgroundEvent(.delayedStart, progress: counters)),
                    .wake(at: now.addingTimeInterval(Self.delayedStartAnswerTime)),
                ]
            }
            let deadline = asked.addingTimeInterval(Self.delayedStartAnswerTime)
            guard now >= deadline else {
                return [.wake(at: deadline)]
            }
            // No answer in time: it begins as it is.
            return beginDelayed(with: nil)
        }
        if let retryAt = journaled.retryAt, retryAt > now {
            waiting = .retrying(at: retryAt)
            return [.wake(at: retryAt)]
        }
        if let conditionsWait {
            waiting = .conditions(conditionsWait)
            return [.wake(at: now.addingTimeInterval(rules.conditionPollInterval))]
        }
        waiting = nil
        spaceNeeded = nil
        enter(.starting)
        return [.makeAttempt(journaled)]
    }

    /// The attempt asked for by `makeAttempt` exists: it runs, unless the task was cancelled or courierd began
    /// stopping meanwhile.
    package mutating func attemptMade(stopping: Bool, now: Date) -> [BackgroundTaskAction] {
        assert(phase == .starting || phase == .finished, "an attempt made while none was asked for (\(phase))")
        guard phase == .starting else {
            return [.discardAttempt]
        }
        switch ending {
        case .cancel, .cancelProducingResumeData:
            return [.discardAttempt] + finishing([completed(CourierError(.cancelled, "cancelled"))])
        case .daemonStopping, .preempted, nil:
            break
        }
        guard !stopping else {
            enter(.waiting)
            return [.discardAttempt]
        }
        enter(.running)
        attemptCheckpointed = false
        attemptEntity = nil
        checkpointedAt = now
        checkpointedBytes = received
        // Not journaled: a restart starts every unfinished task that is not suspended again, running or not.
        var actions: [BackgroundTaskAction] = [.runAttempt]
        // A resumed download has moved its partial file into the session's staging directory: say where at once, so
        // that a crash before the next checkpoint does not lose it.
        if journaled.checkpoint?.partial != nil || journaled.spec.resumeData != nil {
            actions.append(checkpoint(reportingProgress: false, now: now))
        }
        if userSuspended {
            actions += [.suspendAttempt, .journalState(.suspended)]
        }
        return actions
    }

    // MARK: The running attempt

    /// The attempt's counters moved: a checkpoint when enough bytes or time passed since the last one. `response`: the
    /// attempt's response so far (a checkpoint remembers the entity's, ``EntityResponse/remembered(from:)``).
    package mutating func progressed(
        received: Int64? = nil,
        expectedToReceive: Int64? = nil,
        sent: Int64? = nil,
        expectedToSend: Int64? = nil,
        response: IPCMessage.BackgroundResponse? = nil,
        now: Date
    ) -> [BackgroundTaskAction] {
        guard phase == .running else {
            return []
        }
        remember(response)
        self.received = received ?? self.received
        self.expectedToReceive = expectedToReceive ?? self.expectedToReceive
        self.sent = sent ?? self.sent
        self.expectedToSend = expectedToSend ?? self.expectedToSend
        let moved = self.received + self.sent - checkpointedBytes
        // A download whose bytes have all arrived is not checkpointed: its finish is journaled next (a small file's
        // first progress is often its last).
        let complete = self.expectedToReceive > 0 && self.received >= self.expectedToReceive
        let due =
            !complete
            && (!attemptCheckpointed || moved >= rules.checkpointBytes
                || now.timeIntervalSince(checkpointedAt) >= rules.checkpointInterval)
        return due ? [checkpoint(reportingProgress: true, now: now)] : []
    }

    /// The attempt went on from `offset` of the partial file (0: the entity changed and it started again), under
    /// `response`.
    package mutating func resumed(
        offset: Int64,
        expectedTotal: Int64,
        response: IPCMessage.BackgroundResponse? = nil,
        now: Date
    ) -> [BackgroundTaskAction] {
        guard phase == .running else {
            return []
        }
        remember(response)
        received = offset
        reportedReceived = offset
        expectedToReceive = expectedTotal
        // The validator and offset of the new response: checkpointed before more bytes arrive.
        return [
            .record(
                IPCMessage.BackgroundEvent(.resumed(offset: offset, expectedTotal: expectedTotal), progress: counters)
            ),
            checkpoint(reportingProgress: false, now: now),
        ]
    }

    /// Keeps the entity's response from the running attempt's `response`, for its checkpoints, unless one is kept.
    private mutating func remember(_ response: IPCMessage.BackgroundResponse?) {
        if journaled.checkpoint?.entity == nil, attemptEntity == nil {
            attemptEntity = response.flatMap(EntityResponse.remembered)
        }
    }

    /// The runner journaled `checkpoint` (from a `checkpoint` action); `reportingProgress`: with the progress event.
    package mutating func checkpointed(_ checkpoint: TransferCheckpoint, reportingProgress: Bool) {
        journaled.checkpoint = checkpoint
        attemptCheckpointed = true
        checkpointedAt = checkpoint.at
        checkpointedBytes = checkpoint.received + checkpoint.sent
        if reportingProgress {
            reportedReceived = checkpoint.received
            reportedSent = checkpoint.sent
        }
    }

    // MARK: Endings

    /// The download succeeded with `response` as its last exchange and `length` bytes in its file.
    package mutating func downloadFinished(
        response: IPCMessage.BackgroundResponse?,
        length: Int64
    ) -> [BackgroundTaskAction] {
        guard phase != .finished else {
            return []
        }
        enter(.finished)
        // The file is whole: the counters say so even where the last progress was not reported. No progress event
        // before the end: the completion carries the counters, and the app reports the bytes not yet reported before
        // the file (`didWriteData`, then `didFinishDownloadingTo`); an event more per download would be journaled,
        // sent, read and deleted for nothing. (An upload's keeps it: its bytes sent come before its response.)
        received = max(received, length)
        var leading: [IPCMessage.BackgroundEvent] = []
        // The entity's response: the last exchange's, or (when the attempt made none that arrived) the one remembered.
        let entity =
            response.map { EntityResponse.reported(final: $0, entity: journaled.checkpoint?.entity, length: length) }
            ?? journaled.checkpoint?.entity
        if let entity {
            leading += responseEvents(entity)
        }
        return [
            .finishDownload(
                leading: leading,
                completion: .complete(nil, response: entity, progress: counters),
                length: length
            )
        ]
    }

    /// The upload succeeded: `response` and the start of its body go to the app.
    package mutating func uploadFinished(response: IPCMessage.BackgroundResponse?, body: Data?)
        -> [BackgroundTaskAction]
    {
        guard phase != .finished else {
            return []
        }
        var events = progressEvent().map { [$0] } ?? []
        if let response {
            events += responseEvents(response)
        }
        if let body, !body.isEmpty {
            let kept = body.prefix(IPCMessage.BackgroundEvent.maximumBodyLength)
            events.append(IPCMessage.BackgroundEvent(.data(kept), progress: counters))
        }
        return finishing(events + [completed(nil, response: response)])
    }

    /// The attempt ended without success: kept for the next start (courierd stopping), the end of a cancelled task,
    /// a retry after the policy's delay, or the task's failure. `resourceTimeout` bounds the retries, from the
    /// task's creation.
    package mutating func attemptFailed(
        _ error: CourierError,
        response: IPCMessage.BackgroundResponse?,
        resourceTimeout: TimeInterval,
        now: Date
    ) -> [BackgroundTaskAction] {
        guard phase == .running else {
            return []
        }
        switch ending {
        case .daemonStopping:
            enter(.waiting)
            return [.keepForNextAttempt(nextCheckpoint(response, now: now), resumeData: error.resumeData, retry: nil)]
        case .preempted:
            enter(.waiting)
            ending = nil
            return [
                .keepForNextAttempt(nextCheckpoint(response, now: now), resumeData: error.resumeData, retry: nil),
                .launch,
            ]
        case .cancel, .cancelProducingResumeData:
            var cancelled = error
            cancelled.code = .cancelled
            return finishing([completed(cancelled)])
        case nil:
            break
        }
        let attempt = journaled.attempts + 1
        let deadline = journaled.createdAt.addingTimeInterval(resourceTimeout)
        switch rules.retryPolicy.decide(after: error, attempt: attempt, now: now, deadline: deadline) {
        case .retry(let date):
            enter(.waiting)
            journaled.attempts = attempt
            journaled.retryAt = date
            let retry = BackgroundTaskAction.Retry(attempts: attempt, at: date)
            return [
                .keepForNextAttempt(nextCheckpoint(response, now: now), resumeData: error.resumeData, retry: retry),
                .launch,
            ]
        case .waitForSpace:
            enter(.waiting)
            spaceNeeded = StorageSpace.needed(received: received, expectedToReceive: expectedToReceive)
            return [
                .keepForNextAttempt(nextCheckpoint(response, now: now), resumeData: error.resumeData, retry: nil),
                .launch,
            ]
        case .fail(let failure):
            let events = response.map(responseEvents) ?? []
            return finishing(events + [completed(failure, response: response)])
        }
    }

    /// The runner journaled the next attempt's checkpoint (from a `keepForNextAttempt` action).
    package mutating func kept(_ checkpoint: TransferCheckpoint) {
        journaled.checkpoint = checkpoint
        received = checkpoint.received
        sent = 0
    }

    /// The delayed start is decided (the app's answer, or none to wait for): the task forgets its begin date, takes
    /// `request` when there is one, journals that, and looks at its launch again.
    private mutating func beginDelayed(with request: TaskRequest?) -> [BackgroundTaskAction] {
        delayedStartAskedAt = nil
        waiting = nil
        journaled.spec.beginDelayed(with: request)
        return [.rewriteTask(journaled.spec), .launch]
    }

    // MARK: Commands

    /// The app (or `courier cancel`) commands the task; `beginDelayed` carries the app's new request, if any. Fails
    /// for a task that has finished, and for a `beginDelayed` the task did not ask for.
    package mutating func command(
        _ verb: IPCMessage.Command.Verb,
        newRequest: TaskRequest? = nil
    ) -> Result<[BackgroundTaskAction], CourierError> {
        guard phase != .finished else {
            return .failure(CourierError(.unknown, "task \(journaled.identifier) is not running"))
        }
        switch verb {
        case .beginDelayed:
            guard phase == .waiting, journaled.spec.earliestBeginDate != nil, delayedStartAskedAt != nil else {
                return .failure(CourierError(.unknown, "task \(journaled.identifier) is not waiting to begin"))
            }
            return .success(beginDelayed(with: newRequest))
        case .suspend:
            userSuspended = true
            return .success(
                phase == .running ? [.suspendAttempt, .journalState(.suspended)] : [.journalState(.suspended)]
            )
        case .resume:
            userSuspended = false
            switch phase {
            case .running: return .success([.resumeAttempt, .journalState(.running)])
            case .waiting: return .success([.journalState(.waiting), .launch])
            case .starting, .finished: return .success([])
            }
        case .cancel, .cancelProducingResumeData:
            ending = verb == .cancel ? .cancel : .cancelProducingResumeData
            switch phase {
            case .running: return .success([.cancelAttempt(keepingResumeData: verb == .cancelProducingResumeData)])
            case .waiting: return .success(finishing([completed(CourierError(.cancelled, "cancelled"))]))
            case .starting, .finished: return .success([])
            }
        }
    }

    /// `invalidateAndCancel()`, or the user force-quit the app: the task ends at once with `error`.
    package mutating func cancelAll(_ error: CourierError) -> [BackgroundTaskAction] {
        guard phase != .finished else {
            return []
        }
        let ended: [BackgroundTaskAction] =
            switch phase {
            case .running: [.cancelAttempt(keepingResumeData: false)]
            // The attempt being made, if the runner registered it already (if not, it finds the task gone).
            case .starting: [.discardAttempt]
            case .waiting, .finished: []
            }
        ending = .cancel
        return finishing([completed(error)]) + ended
    }

    /// A task of higher priority takes the attempt's slot: the attempt is cut, its partial file kept, and the task
    /// asks for a slot again (``TransferSlots``).
    package mutating func preempt() -> [BackgroundTaskAction] {
        guard phase == .running, ending == nil else {
            return []
        }
        ending = .preempted
        return [.cancelAttempt(keepingResumeData: true)]
    }

    /// courierd is stopping: the running attempt is cut, its partial file kept for the next start.
    package mutating func stop() -> [BackgroundTaskAction] {
        guard phase == .running else {
            return []
        }
        ending = .daemonStopping
        return [.cancelAttempt(keepingResumeData: true)]
    }

    // MARK: Helpers

    /// The counters as the app hears of them with each event.
    private var counters: TransferProgress {
        TransferProgress(
            received: received,
            expectedToReceive: expectedToReceive,
            sent: sent,
            expectedToSend: expectedToSend
        )
    }

    /// The events of the final exchange `response`.
    private func responseEvents(_ response: IPCMessage.BackgroundResponse) -> [IPCMessage.BackgroundEvent] {
        IPCMessage.BackgroundEvent.response(response, requested: journaled.spec.spec.url, progress: counters)
    }

    /// The task's last event, with the final exchange's timings when it made one.
    private func completed(
        _ error: CourierError?,
        response: IPCMessage.BackgroundResponse? = nil
    ) -> IPCMessage.BackgroundEvent {
        .complete(error, response: response, progress: counters)
    }

    private mutating func finishing(_ events: [IPCMessage.BackgroundEvent]) -> [BackgroundTaskAction] {
        enter(.finished)
        return [.finish(events)]
    }

    /// A checkpoint of the running attempt's counters (the runner adds its partial file).
    private func checkpoint(reportingProgress: Bool, now: Date) -> BackgroundTaskAction {
        let checkpoint = TransferCheckpoint(
            received: received,
            expectedToReceive: expectedToReceive,
            sent: sent,
            expectedToSend: expectedToSend,
            boot: nil,
            at: now,
            entity: journaled.checkpoint?.entity ?? attemptEntity
        )
        var kept = checkpoint
        kept.uploadResource = journaled.checkpoint?.uploadResource
        return .checkpoint(kept, progress: reportingProgress ? progressEvent() : nil)
    }

    /// The next attempt's checkpoint (the runner adds the ended attempt's partial file and its length), keeping the
    /// entity's response: an earlier attempt's, or this one's.
    private func nextCheckpoint(_ response: IPCMessage.BackgroundResponse?, now: Date) -> TransferCheckpoint {
        var checkpoint = TransferCheckpoint(
            expectedToReceive: expectedToReceive,
            expectedToSend: expectedToSend,
            boot: nil,
            at: now,
            entity: journaled.checkpoint?.entity ?? attemptEntity ?? response.flatMap(EntityResponse.remembered)
        )
        checkpoint.uploadResource = journaled.checkpoint?.uploadResource
        return checkpoint
    }

    /// The coalesced progress the app has not heard of, or nil.
    private func progressEvent() -> IPCMessage.BackgroundEvent? {
        let moved = journaled.spec.kind == .upload ? sent != reportedSent : received != reportedReceived
        return moved ? IPCMessage.BackgroundEvent(.progress, progress: counters) : nil
    }
}

extension BackgroundTaskMachine {
    /// What a waiting task waits for.
    private enum Waiting: Sendable, Equatable {
        case relaunchDelay(until: Date)
        case scheduled(Date)
        case askingTheApp
        case retrying(at: Date)
        /// The machine's conditions (``TransferRequirements``) or the space it needs, said by them.
        case conditions(String)

        var text: String {
            switch self {
            case .relaunchDelay(let until):
                "created in the background: waits for the app's relaunch delay until \(until.formatted(.iso8601))"
            case .scheduled(let begin):
                "scheduled: begins no earlier than \(begin.formatted(.iso8601)) (earliestBeginDate)"
            case .askingTheApp:
                "asking the app whether it begins (willBeginDelayedRequest)"
            case .retrying(let at):
                "retrying at \(at.formatted(.iso8601))"
            case .conditions(let text):
                text
            }
        }
    }
}

extension BackgroundTaskMachine {
    /// Moves to `next`: an impossible change (``Phase/allows(_:)``) stops a debug build, as the C engine's
    /// `set_state` does.
    private mutating func enter(_ next: Phase) {
        assert(phase.allows(next), "background task phase \(phase) → \(next)")
        phase = next
    }
}
