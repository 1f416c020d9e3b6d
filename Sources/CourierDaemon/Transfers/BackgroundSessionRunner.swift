package import Courier
import CourierConcurrency
package import Foundation
package import Logging

/// Runs the transfers of one background session inside courierd: an in-process ``Session`` (the same task layer and
/// task machine as an app's default session) whose delegate is this runner. Every event the app must hear is
/// journaled first, then pushed to the app's connection if it has one open.
///
/// Threads: delegate calls arrive serially on the session's delegate queue; commands come from connection threads;
/// retries and condition checks from timers. Everything that changes is in `state`; journal writes and pushes go
/// through ``record(_:)``, which keeps their order on the wire the order of the sequence numbers.
package final class BackgroundSessionRunner: SessionDownloadDelegate, Sendable {
    /// Sends events to the connection that holds the session; false when the connection is gone.
    package typealias EventSink = @Sendable (IPCMessage.Events) -> Bool

    /// Why a running transfer is being stopped by the daemon rather than by the network.
    enum Ending: Sendable {
        case cancel
        case cancelProducingResumeData
        /// courierd is stopping: the task stays in the journal and resumes at the next start.
        case daemonStopping
    }

    /// One journaled task this runner looks after.
    struct Live: Sendable {
        var journaled: JournaledTask
        /// The session task of the current attempt; nil while waiting (a retry, conditions) or suspended before
        /// it started.
        var task: SessionTask?
        var received: Int64 = 0
        var expectedToReceive: Int64 = -1
        var sent: Int64 = 0
        var expectedToSend: Int64 = -1
        /// What the app has been told (journaled `wroteData` / `sentBodyData` totals).
        var reportedReceived: Int64 = 0
        var reportedSent: Int64 = 0
        var checkpointedAt = Date.distantPast
        var checkpointedBytes: Int64 = 0
        /// The current attempt has been checkpointed once: its first bytes are journaled at once, so that a crash
        /// right after does not restart a download from zero.
        var attemptCheckpointed = false
        var waitingReason: String?
        var userSuspended = false
        var ending: Ending?
        /// Its completion is journaled; later session calls about it are ignored.
        var finished = false
    }

    struct State: Sendable {
        var configuration: IPCMessage.OpenSession
        var live: [Int: Live] = [:]
        /// The journal identifier of each session task, by its `taskIdentifier` in the daemon's session.
        var journalIdentifiers: [Int: Int] = [:]
        var sink: EventSink?
        var sinkOwner: Int32?
        var stopping = false
        /// Signalled when the session reports its invalidation (``stop(timeout:)`` waits for it).
        var invalidated: DispatchSemaphore?
    }

    package let identifier: String
    let journal: Journal
    let paths: DaemonPaths
    let settings: TransferSettings
    let logger: Logger
    /// Called with the session's identifier and the events when a task's end was journaled while no app is
    /// connected (courierd may relaunch the app, or tell the user).
    private let undelivered: @Sendable (String, [IPCMessage.SequencedEvent]) -> Void
    let state: LockedValue<State>
    /// Held while an event is journaled and pushed; counts the batches recorded. (A counter rather than `()`:
    /// TSan reports inout access to a zero-sized value as a race.)
    private let delivery = LockedValue<UInt64>(0)
    private let sessionSlot = LockedValue<Session?>(nil)

    package init(
        configuration: IPCMessage.OpenSession,
        journal: Journal,
        paths: DaemonPaths,
        settings: TransferSettings,
        logger: Logger,
        undelivered: @escaping @Sendable (String, [IPCMessage.SequencedEvent]) -> Void = { _, _ in }
    ) {
        identifier = configuration.identifier
        self.undelivered = undelivered
        self.journal = journal
        self.paths = paths
        self.settings = settings
        self.logger = logger
        state = LockedValue(State(configuration: configuration))
        var sessionConfiguration = SessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
        sessionConfiguration.timeoutIntervalForResource = configuration.resourceTimeout
        sessionConfiguration.httpAdditionalHeaders = configuration.additionalHeaders
        sessionConfiguration.temporaryDirectory = paths.staging
        sessionConfiguration.resumeDataDirectory = paths.partials
        sessionConfiguration.engineLoopCount = 1
        let session = Session(configuration: sessionConfiguration, delegate: self, delegateQueue: nil)
        session.sessionDescription = "courierd:\(configuration.identifier)"
        sessionSlot.withLock { $0 = session }
    }

    var session: Session? {
        sessionSlot.withLock { $0 }
    }

    /// The app asked to be relaunched when this session has events for it.
    package var sendsLaunchEvents: Bool {
        state.withLock { $0.configuration.sendsLaunchEvents }
    }

    /// The app reopened the session, perhaps with another configuration: later attempts use its conditions.
    package func update(_ configuration: IPCMessage.OpenSession) {
        state.withLock { $0.configuration = configuration }
    }

    // MARK: The app's connection

    /// Sends the session's unacknowledged events to `sink` (with `finished`, so the app calls
    /// `urlSessionDidFinishEvents`), then pushes every new event to it until ``detach(owner:)``.
    package func attach(owner: Int32, sink: @escaping EventSink) {
        delivery.withLock { _ in
            if let pending = try? journal.pendingEvents(session: identifier), !pending.isEmpty {
                _ = sink(IPCMessage.Events(session: identifier, events: pending, finished: true))
            }
            state.withLock { state in
                state.sink = sink
                state.sinkOwner = owner
            }
        }
    }

    /// The connection `owner` closed, or closed the session: events are only journaled until the next attach.
    package func detach(owner: Int32) {
        state.withLock { state in
            if state.sinkOwner == owner {
                state.sink = nil
                state.sinkOwner = nil
            }
        }
    }

    /// Journals events and pushes them, in sequence order. `write` returns the journaled events.
    func record(_ write: () throws(JournalError) -> [IPCMessage.SequencedEvent]) {
        delivery.withLock { recorded in
            recorded += 1
            let events: [IPCMessage.SequencedEvent]
            do {
                events = try write()
            } catch {
                logger.error("an event was not journaled", metadata: ["session": "\(identifier)", "error": "\(error)"])
                return
            }
            guard !events.isEmpty else {
                return
            }
            guard let sink = state.withLock({ $0.sink }) else {
                if events.contains(where: { if case .completed = $0.event { true } else { false } }) {
                    undelivered(identifier, events)
                }
                return
            }
            if !sink(IPCMessage.Events(session: identifier, events: events, finished: false)) {
                state.withLock { state in
                    state.sink = nil
                    state.sinkOwner = nil
                }
            }
        }
    }

    // MARK: Tasks

    /// Takes over tasks journaled by an earlier run of courierd: partial files are adopted, running and waiting
    /// tasks start again (a download from its bytes on disk), suspended ones wait for a resume.
    package func restore(_ tasks: [JournaledTask]) {
        for var task in tasks where task.state != .completed {
            adoptPartialFile(of: &task)
            state.withLock { state in
                var live = Live(journaled: task)
                live.received = task.bytesOnDisk
                live.reportedReceived = task.bytesOnDisk
                live.expectedToReceive = task.expectedLength
                live.userSuspended = task.state == .suspended
                state.live[task.identifier] = live
            }
            launch(task.identifier)
        }
    }

    /// A task the app created (already journaled): starts it when its conditions allow.
    package func add(_ task: JournaledTask) {
        state.withLock { $0.live[task.identifier] = Live(journaled: task) }
        launch(task.identifier)
    }

    /// Carries out an app's command. Returns an error for a task this session does not have.
    package func perform(_ verb: IPCMessage.Command.Verb, task identifier: Int) -> CourierError? {
        let found = state.withLock { state -> Result<SessionTask?, CourierError> in
            guard var live = state.live[identifier], !live.finished else {
                return .failure(CourierError(.unknown, "task \(identifier) of \"\(self.identifier)\" is not running"))
            }
            switch verb {
            case .suspend:
                live.userSuspended = true
            case .resume:
                live.userSuspended = false
            case .cancel:
                live.ending = .cancel
            case .cancelProducingResumeData:
                live.ending = .cancelProducingResumeData
            }
            state.live[identifier] = live
            return .success(live.task)
        }
        let running: SessionTask?
        switch found {
        case .success(let task): running = task
        case .failure(let refusal): return refusal
        }
        switch verb {
        case .suspend:
            running?.suspend()
            try? journal.setState(.suspended, session: self.identifier, task: identifier)
        case .resume:
            if let running {
                running.resume()
                try? journal.setState(.running, session: self.identifier, task: identifier)
            } else {
                launch(identifier)
            }
        case .cancel, .cancelProducingResumeData:
            if let download = running as? DownloadTask, verb == .cancelProducingResumeData {
                download.cancel(byProducingResumeData: { _ in })
            } else if let running {
                running.cancel()
            } else {
                end(identifier, error: CourierError(.cancelled, "cancelled"), response: nil)
            }
        }
        return nil
    }

    /// `invalidateAndCancel()`, or the user force-quit the app: every task ends with `cancelled` (and `reason`),
    /// journaled before this returns.
    package func cancelAll(
        reason: String = "the session was invalidated",
        cancelledReason: BackgroundTaskCancelledReason? = nil
    ) {
        let tasks = state.withLock { state -> [(Int, SessionTask?)] in
            var tasks: [(Int, SessionTask?)] = []
            for (identifier, var live) in state.live where !live.finished {
                live.ending = .cancel
                state.live[identifier] = live
                tasks.append((identifier, live.task))
            }
            return tasks.sorted { $0.0 < $1.0 }
        }
        var error = CourierError(.cancelled, reason)
        error.backgroundTaskCancelledReason = cancelledReason
        for (identifier, task) in tasks {
            finish(identifier, events: [.completed(error: error)], file: nil)
            task?.cancel()
        }
    }

    /// What `listTasks` answers: the journal's record, with the live counters and why a task waits.
    package func snapshots() throws(JournalError) -> [IPCMessage.TaskSnapshot] {
        let journaled = try journal.tasks(session: identifier)
        let live = state.withLock { $0.live }
        return journaled.map { task in
            var snapshot = IPCMessage.TaskSnapshot(
                identifier: task.identifier,
                taskDescription: task.spec.taskDescription,
                state: SessionTask.State.suspended.rawValue,
                countOfBytesReceived: task.bytesOnDisk,
                countOfBytesExpectedToReceive: task.expectedLength,
                countOfBytesSent: task.bytesSent,
                countOfBytesExpectedToSend: task.expectedToSend
            )
            snapshot.task = task.spec
            guard let current = live[task.identifier], task.state != .completed, !current.finished else {
                snapshot.state = SessionTask.State.completed.rawValue
                return snapshot
            }
            snapshot.countOfBytesReceived = current.received
            snapshot.countOfBytesExpectedToReceive = current.expectedToReceive
            snapshot.countOfBytesSent = current.sent
            snapshot.countOfBytesExpectedToSend = current.expectedToSend
            if current.userSuspended {
                snapshot.state = SessionTask.State.suspended.rawValue
            } else if current.task != nil {
                snapshot.state = SessionTask.State.running.rawValue
            } else {
                snapshot.waitingReason = current.waitingReason
            }
            return snapshot
        }
    }

    /// courierd is stopping: each running download is cut with resume data kept as its checkpoint, so it resumes
    /// at the next start; then the session is invalidated (its engine stops). Waits at most `timeout`.
    package func stop(timeout: TimeInterval = 5) {
        let running = state.withLock { state -> [SessionTask] in
            state.stopping = true
            var running: [SessionTask] = []
            for (identifier, var live) in state.live where !live.finished {
                guard let task = live.task else {
                    continue
                }
                live.ending = .daemonStopping
                state.live[identifier] = live
                running.append(task)
            }
            return running
        }
        for task in running {
            if let download = task as? DownloadTask {
                download.cancel(byProducingResumeData: { _ in })
            } else {
                task.cancel()
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, state.withLock({ state in state.live.values.contains { $0.task != nil } }) {
            usleep(10_000)
        }
        let invalidated = DispatchSemaphore(value: 0)
        state.withLock { $0.invalidated = invalidated }
        session?.invalidateAndCancel()
        _ = invalidated.wait(timeout: .now() + timeout)
        sessionSlot.withLock { $0 = nil }
    }

    package func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        state.withLock { $0.invalidated }?.signal()
    }
}
