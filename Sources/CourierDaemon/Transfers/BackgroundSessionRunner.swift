package import Courier
import CourierConcurrency
package import Foundation
package import Logging

/// Runs the transfers of one background session inside courierd: one ``BackgroundTaskMachine`` per journaled task
/// decides what happens to it, and each attempt runs as a task of an in-process ``Session`` made straight from the
/// journaled request, on the same ``TaskMachine`` as an app's tasks, reporting to this runner as its
/// ``TaskObserver`` (no delegate protocol, no `URLRequest` or `HTTPURLResponse` in between). Every event the app must
/// hear is journaled first, then pushed to the app's connection if it has one open.
///
/// Threads: the attempts' reports arrive serially on the session's delegate queue; commands come from connection
/// queues; wakes from the ``WakeSchedule``. Each input goes to a task's machine under `state`'s lock and the actions
/// that come out are carried out after it is released (``drive(_:ended:_:)``); journal writes and pushes go through ``record(_:)``,
/// which keeps their order on the wire the order of the sequence numbers.
package final class BackgroundSessionRunner: TaskObserver {
    /// Gives events to the connection that holds the session, without waiting for them to be written.
    package typealias EventSink = @Sendable (IPCMessage.Events) -> EventDelivery

    /// What the connection did with events given to it.
    package enum EventDelivery: Sendable {
        /// On their way to the app.
        case queued
        /// Not sent: the app has not read what it was sent before. They are in the journal; ``catchUp(owner:)``
        /// sends them when the connection has room.
        case withheld
        /// The connection is gone: events are only journaled until the next attach.
        case gone
    }

    struct State: Sendable {
        var configuration: IPCMessage.OpenSession
        /// The machine of every task not finished, by journal identifier.
        var machines: [Int: MachineCell] = [:]
        /// The session task of each task's current attempt, by journal identifier.
        var attempts: [Int: SessionTask] = [:]
        /// The journal identifier of each attempt, by its `taskIdentifier` in the daemon's session.
        var journalIdentifiers: [Int: Int] = [:]
        var sink: EventSink?
        var sinkOwner: Int32?
        /// The sequence number through which the sink has every event the app has not acknowledged (it took them, in
        /// order, with no gap): a catch-up sends those after it (``catchUp(owner:)``).
        var givenThrough: UInt64 = 0
        /// The sink withheld events: until a catch-up has sent every one after ``givenThrough``, new events stay in
        /// the journal, so that none reaches the app before an earlier one (it acknowledges the last it has).
        var behind = false
        /// Events journaled and not yet pushed, in sequence order (``record(_:)``).
        var outbox: [IPCMessage.SequencedEvent] = []
        var stopping = false
        /// Attempts the machines asked for, made together in ``StartOrder`` a moment later (``queueAttempt(_:)``).
        var startQueue: [JournaledTask] = []
        /// Downloads' ends to journal together once their batch of reports was handed over (``queueFinish(_:)``).
        var finishes: [Journal.Finish] = []
        /// The last counts of each task whose machine finished and whose end is not journaled yet, by journal
        /// identifier: until it is, the task is listed as running, with these counts (``snapshots(offset:limit:)``).
        var unjournaledEnds: [Int: TransferProgress] = [:]
    }

    package let identifier: String
    let journal: Journal
    let paths: DaemonPaths
    /// `paths.downloads` as a path: each finished download is named under it.
    let downloadsPath: String
    let settings: TransferSettings
    /// Flushes the finished downloads handed over unflushed (every runner's: one per courierd).
    let flusher: FileFlusher
    let logger: Logger
    /// Called with the session's identifier and the events when a task's end was journaled while no app is
    /// connected (courierd may relaunch the app, or tell the user).
    private let undelivered: @Sendable (String, [IPCMessage.SequencedEvent]) -> Void
    /// Waited on by ``stop(timeout:)`` for the attempts to end.
    let state: WaitableValue<State>
    /// Held while events are journaled and put in the outbox; counts the batches recorded. (A counter rather than
    /// `()`: TSan reports inout access to a zero-sized value as a race.)
    private let delivery = LockedValue<UInt64>(0)
    /// Held while the outbox is pushed (taken before `delivery` when both are); counts the pushes.
    private let pushing = LockedValue<UInt64>(0)
    private let sessionSlot = LockedValue<Session?>(nil)
    /// When the waiting tasks look at their start again (one timer for the session).
    let wakes: WakeSchedule

    package init(
        configuration: IPCMessage.OpenSession,
        journal: Journal,
        paths: DaemonPaths,
        settings: TransferSettings,
        flusher: FileFlusher,
        logger: Logger,
        undelivered: @escaping @Sendable (String, [IPCMessage.SequencedEvent]) -> Void = { _, _ in }
    ) {
        identifier = configuration.identifier
        self.undelivered = undelivered
        self.journal = journal
        self.paths = paths
        downloadsPath = paths.downloads.path
        self.settings = settings
        self.flusher = flusher
        self.logger = logger
        state = WaitableValue(State(configuration: configuration))
        wakes = WakeSchedule(label: "courierd.wakes.\(configuration.identifier)")
        var sessionConfiguration = SessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
        sessionConfiguration.timeoutIntervalForResource = configuration.resourceTimeout
        // As Apple's background sessions do, whatever the app asked: an attempt that finds no route to its host waits
        // for one (within the resource timeout) instead of failing with notConnectedToInternet, which is not retried.
        sessionConfiguration.waitsForConnectivity = true
        sessionConfiguration.httpAdditionalHeaders = configuration.additionalHeaders
        // The app's, as Apple's background sessions take it (from the configuration courierd first runs the session
        // with in this run).
        if let connections = configuration.maximumConnectionsPerHost, connections > 0 {
            sessionConfiguration.httpMaximumConnectionsPerHost = connections
        }
        if let pem = configuration.trustedCertificatesPEM {
            sessionConfiguration.trustedCertificateAuthorities = .pem(pem)
        }
        sessionConfiguration.temporaryDirectory = paths.staging
        sessionConfiguration.resumeDataDirectory = paths.partials
        // The engine's loops are the library's default (the cores, at most 4), as an app's session has: with one loop
        // on two cores, 200 downloads of 8 MiB ended after 2.9-3.2 s instead of 2.6-2.7 s.
        sessionConfiguration.sharedBandwidthLimiters = settings.bandwidthLimiter.map { [$0] } ?? []
        let session = Session(configuration: sessionConfiguration, delegate: nil, delegateQueue: nil)
        session.sessionDescription = "courierd:\(configuration.identifier)"
        sessionSlot.withLock { $0 = session }
        wakes.onWake { [weak self] identifiers in
            self?.launch(identifiers)
        }
    }

    var session: Session? {
        sessionSlot.withLock { $0 }
    }

    /// The session's journaled tasks by state (``DaemonFigures/tasks``).
    package var tasksByState: [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for cell in state.machines.values {
                let name =
                    cell.machine.userSuspended
                    ? "suspended" : "\(cell.machine.phase)"
                counts[name, default: 0] += 1
            }
            return counts
        }
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
        pushing.withLock { _ in
            delivery.withLock { _ in
                // The outbox's events are in the journal: they go with the replay. Every event before the first pending
                // one was acknowledged.
                var given = (try? journal.lastSequence(session: identifier)) ?? 0
                var behind = false
                if let pending = try? journal.pendingEvents(session: identifier), let first = pending.first {
                    let replay = IPCMessage.Events(session: identifier, events: pending, finished: true)
                    behind = sink(replay) != .queued
                    given = behind ? first.sequence - 1 : pending[pending.count - 1].sequence
                }
                state.withLock { state in
                    state.sink = sink
                    state.sinkOwner = owner
                    state.outbox = []
                    state.givenThrough = given
                    state.behind = behind
                }
            }
        }
    }

    /// The connection `owner` has written everything it was given after it withheld events: the events after the
    /// last it took go from the journal, a page of ``catchUpPage`` at a time until the connection withholds again (the
    /// rest goes at its next catch-up) or none is left (then new events go to it as they come again). So a connection
    /// holds at most its bound and a page however far its app fell behind, courierd reads the backlog a page at a
    /// time, and the app gets every event in order.
    package func catchUp(owner: Int32) {
        pushing.withLock { _ in
            delivery.withLock { _ in
                guard let sink = state.withLock({ $0.sinkOwner == owner ? $0.sink : nil }) else {
                    return
                }
                // What the outbox holds is in the journal: it goes with the pages.
                state.withLock { $0.outbox = [] }
                var sent = 0
                while true {
                    let after = state.withLock { $0.givenThrough }
                    let page = try? journal.pendingEvents(session: identifier, after: after, limit: Self.catchUpPage)
                    guard let page else {
                        break
                    }
                    if !page.isEmpty {
                        let events = IPCMessage.Events(session: identifier, events: page, finished: false)
                        guard give(events, to: sink) == .queued else {
                            break
                        }
                        sent += page.count
                    }
                    if page.count < Self.catchUpPage {
                        state.withLock { $0.behind = false }
                        break
                    }
                }
                if sent > 0 {
                    logger.info(
                        "the app reads again: the events it has not taken are sent from the journal",
                        metadata: ["session": "\(identifier)", "events": "\(sent)"]
                    )
                }
            }
        }
    }

    /// The most events a catch-up reads from the journal and offers at once.
    package static let catchUpPage = 1_000

    /// The connection `owner` closed, or closed the session: events are only journaled until the next attach. When
    /// the app went without acknowledging the end of a task (it died, or quit, mid-delivery), those events are handed
    /// to `undelivered` as if they had just happened: the app is launched again for them.
    package func detach(owner: Int32) {
        let detached = state.withLock { state -> Bool in
            guard state.sinkOwner == owner else {
                return false
            }
            state.sink = nil
            state.sinkOwner = nil
            return true
        }
        guard detached else {
            return
        }
        delivery.withLock { _ in
            guard state.withLock({ $0.sink == nil }),
                let pending = try? journal.pendingEvents(session: identifier),
                pending.contains(where: { $0.event.completion != nil })
            else {
                return
            }
            undelivered(identifier, pending)
        }
    }

    /// Journals events and pushes them, in sequence order. `write` returns the journaled events.
    ///
    /// The journal write and the outbox keep the order; the push comes after, with whatever else was recorded
    /// meanwhile, in one `events` message: the connection flushes the journal before it sends (group commit), so
    /// records made by several threads while one push is under way share the next flush and the next message.
    func record(_ write: () throws(JournalError) -> [IPCMessage.SequencedEvent]) {
        let recordedAny = delivery.withLock { recorded -> Bool in
            recorded += 1
            let events: [IPCMessage.SequencedEvent]
            do {
                events = try write()
            } catch {
                logger.error("an event was not journaled", metadata: ["session": "\(identifier)", "error": "\(error)"])
                return false
            }
            state.withLock { $0.outbox += events }
            return !events.isEmpty
        }
        if recordedAny {
            pushOutbox()
        }
    }

    /// Gives `events` to the connection's `sink` (with `pushing` held) and says what it did with them. Events it took
    /// right after the last it took move ``State/givenThrough``; events withheld put the runner ``State/behind``; a
    /// connection that is gone is forgotten: events are only journaled until the next attach.
    @discardableResult
    private func give(_ events: IPCMessage.Events, to sink: EventSink) -> EventDelivery {
        let delivery = sink(events)
        state.withLock { state in
            switch delivery {
            case .queued:
                guard let first = events.events.first?.sequence, let last = events.events.last?.sequence else {
                    return
                }
                if first > state.givenThrough + 1 {
                    // After a gap (events withheld before them): a catch-up sends from the gap.
                    return
                }
                state.givenThrough = max(state.givenThrough, last)
            case .withheld:
                state.behind = true
            case .gone:
                state.sink = nil
                state.sinkOwner = nil
            }
        }
        return delivery
    }

    /// Pushes every event in the outbox to the app's connection (or, with none, hands the completions to
    /// `undelivered`); nothing when another push already took them. A message holds at most ``catchUpPage`` events,
    /// as a catch-up's: events recorded while a push waited on a slow connection come in pages, and the connection's
    /// bound is checked for each (once it withholds one, the rest come from the journal).
    private func pushOutbox() {
        pushing.withLock { pushes in
            let (events, sink) = state.withLock { state in
                defer { state.outbox = [] }
                return (state.outbox, state.sink)
            }
            guard !events.isEmpty else {
                return
            }
            pushes += 1
            guard let sink else {
                if events.contains(where: { $0.event.completion != nil }) {
                    // On disk before the app is launched for them.
                    journal.sync()
                    undelivered(identifier, events)
                }
                return
            }
            // Withheld events are in the journal: the connection asks for them again (``catchUp(owner:)``), and until
            // then newer ones stay there too.
            guard !state.withLock({ $0.behind }) else {
                return
            }
            var start = events.startIndex
            while start < events.endIndex {
                let end = min(start + Self.catchUpPage, events.endIndex)
                let page = IPCMessage.Events(session: identifier, events: Array(events[start..<end]), finished: false)
                guard give(page, to: sink) == .queued else {
                    return
                }
                start = end
            }
        }
    }

    // MARK: Tasks

    /// Takes over tasks journaled by an earlier run of courierd: partial files are adopted, running and waiting
    /// tasks start again (a download from its bytes on disk), suspended ones wait for a resume.
    package func restore(_ tasks: [JournaledTask]) {
        let rules = BackgroundTaskMachine.Rules(settings)
        var restored: [Int] = []
        for var task in tasks where task.state != .completed {
            adoptPartialFile(of: &task)
            let cell = MachineCell(BackgroundTaskMachine(restoring: task, rules: rules))
            state.withLock { $0.machines[task.identifier] = cell }
            restored.append(task.identifier)
        }
        launch(restored)
    }

    /// A task the app created (already journaled): starts it when its conditions allow.
    package func add(_ task: JournaledTask) {
        let cell = MachineCell(BackgroundTaskMachine(adding: task, rules: BackgroundTaskMachine.Rules(settings)))
        state.withLock { $0.machines[task.identifier] = cell }
        launch(task.identifier)
    }

    /// Carries out an app's command. Returns an error for a task this session does not have running.
    package func perform(
        _ verb: IPCMessage.Command.Verb,
        task identifier: Int,
        newRequest: TaskRequest? = nil
    ) -> CourierError? {
        var refusal: CourierError? = CourierError(
            .unknown,
            "task \(identifier) of \"\(self.identifier)\" is not running"
        )
        drive(identifier) { machine, _ in
            switch machine.command(verb, newRequest: newRequest) {
            case .success(let actions):
                refusal = nil
                return actions
            case .failure(let error):
                refusal = error
                return []
            }
        }
        return refusal
    }

    /// `invalidateAndCancel()`, or the user force-quit the app: every task ends with `cancelled` (and `reason`),
    /// journaled before this returns.
    package func cancelAll(
        reason: String = "the session was invalidated",
        cancelledReason: BackgroundTaskCancelledReason? = nil
    ) {
        var error = CourierError(.cancelled, reason)
        error.backgroundTaskCancelledReason = cancelledReason
        for identifier in state.withLock({ $0.machines.keys.sorted() }) {
            drive(identifier) { machine, _ in machine.cancelAll(error) }
        }
    }

    /// What `listTasks` answers: the journal's record, with the live counters and why a task waits; with `limit`, the
    /// page of that many from position `offset`.
    package func snapshots(offset: Int = 0, limit: Int? = nil) throws(JournalError) -> [IPCMessage.TaskSnapshot] {
        let journaled = try journal.tasks(session: identifier, offset: offset, limit: limit)
        // The page's machines and ends not journaled yet, copied under the lock (each machine is changed in place
        // under it), then the ends journaled: an end journaled after the page was read is in one or the other.
        let (machines, unjournaledEnds) = state.withLock { state in
            var machines: [Int: BackgroundTaskMachine] = [:]
            var unjournaledEnds: [Int: TransferProgress] = [:]
            for task in journaled {
                machines[task.identifier] = state.machines[task.identifier]?.machine
                unjournaledEnds[task.identifier] = state.unjournaledEnds[task.identifier]
            }
            return (machines, unjournaledEnds)
        }
        // How each ended task ended, and its counts then, from its completion the app has not acknowledged yet.
        var endings: [Int: IPCMessage.BackgroundEvent] = [:]
        for sequenced in try journal.pendingEvents(session: identifier) where sequenced.event.completion != nil {
            endings[sequenced.task] = sequenced.event
        }
        return journaled.map { task in
            var snapshot = IPCMessage.TaskSnapshot(journaled: task)
            if task.state != .completed, endings[task.identifier] == nil, let counts = unjournaledEnds[task.identifier]
            {
                // Ended, and not said yet (to anyone) until the journal says it.
                snapshot.state = SessionTask.State.running.rawValue
                snapshot.count(counts)
                return snapshot
            }
            guard let machine = machines[task.identifier], task.state != .completed else {
                snapshot.end(with: endings[task.identifier])
                return snapshot
            }
            snapshot.count(machine.progress)
            if machine.userSuspended {
                snapshot.state = SessionTask.State.suspended.rawValue
            } else if machine.phase == .running {
                snapshot.state = SessionTask.State.running.rawValue
            } else {
                snapshot.waitingReason = machine.waitingReason
            }
            return snapshot
        }
    }

    /// courierd is stopping: each running download is cut with resume data kept as its checkpoint, so it resumes
    /// at the next start; then the session is invalidated (its engine stops). Waits at most `timeout`.
    package func stop(timeout: TimeInterval = 5) {
        let identifiers = state.withLock { state -> [Int] in
            state.stopping = true
            return state.machines.keys.sorted()
        }
        for identifier in identifiers {
            drive(identifier) { machine, _ in machine.stop() }
        }
        state.wait(atMost: timeout) { $0.attempts.isEmpty }
        let invalidated = DispatchSemaphore(value: 0)
        session?.invalidateAndCancel { invalidated.signal() }
        _ = invalidated.wait(timeout: .now() + timeout)
        sessionSlot.withLock { $0 = nil }
        journalFinishes()
    }
}
