import CourierIPC
import Foundation

/// Every decision of a background session's link to courierd, as a pure state machine beside ``TaskMachine``: the
/// opening, the reconnections after courierd went away (and when to start it), which tasks courierd holds, which
/// creations wait for a connection or for an answer, which replayed events are new, what to acknowledge, and when the
/// delegate is owed `urlSessionDidFinishEvents`. Each input is a method that returns the ``Action``s to carry out, in
/// order; it holds no lock, does no I/O and reads no clock (the time comes with each input), so every transition is
/// tested on a clock of the test's (`DaemonLinkTransitionTests`).
///
/// ``DaemonBackend`` keeps one machine behind one lock, applies an input under it, and performs the actions after
/// releasing it: connecting on its link queue, sending frames, handing events to the task layer. `Connection` is
/// the connection's type (``DaemonConnection``; a token in tests), compared by identity.
struct DaemonLinkMachine<Connection: AnyObject & Sendable>: Sendable {
    /// A task courierd runs for this session, from its submission to its completion.
    struct Binding: Sendable {
        var hop: Int
        /// The download's staging file: a finished download is placed there.
        var sinkPath: String?
        var progress = TransferProgress()
        /// The creation, until courierd answered it (nil for a task courierd journaled, or one adopted).
        var creation: IPCMessage.BackgroundTask?
        /// The connection the creation went on (``DaemonLinkMachine/generation``); nil while it waits for one.
        var sentOn: Int?
        /// The finished file courierd handed over could not be put in the sink: the task fails with this.
        var placementFailure: CourierError?

        /// courierd answered that it journaled the task.
        var journaled: Bool {
            creation == nil
        }
    }

    enum Phase: Sendable {
        /// The first connection is being made; task factories wait for it (``isSettled``).
        case opening
        /// Connected; `generation` counts the connections made.
        case open(Connection, generation: Int)
        /// The connection ended; a new one is being made on `schedule` (`attempting`: an attempt is under way, else
        /// the next waits for its timer).
        case reconnecting(ReconnectSchedule, attempting: Bool)
        /// courierd could not be reached for the request timeout; the next submission or command tries again.
        case unreachable(CourierError)
        /// The first opening failed (courierd refused the session, or could not be started): every task fails with
        /// this at `resume()`.
        case failed(CourierError)
        /// The session is gone (released, invalidated, or abandoned as a dying app would).
        case closed
    }

    /// What the backend does, in order, after an input.
    enum Action: Sendable {
        /// Make a connection and open the session on it; report with ``attemptSucceeded(_:nextTask:holdsReplay:inForeground:)``
        /// or ``attemptFailed(_:startedDaemon:now:)``. `startingDaemon`: start courierd when none answers (on a
        /// reconnection, only where its state directory is still there).
        case connect(startingDaemon: Bool, firstOpening: Bool)
        /// Call ``wake(now:)`` after this long.
        case wake(after: TimeInterval)
        /// Report this connection's end with ``connectionEnded(_:now:)``.
        case watch(Connection)
        /// courierd's next task identifier: the session's identifiers go on from there.
        case continueIdentifiers(Int)
        /// Ask `connection` for the session's tasks; report with ``listed(_:on:holdsReplay:)``.
        case list(Connection)
        /// Recreate a task object for each of these tasks of an earlier run of the app (their submissions bind, they
        /// create nothing: ``bindAdopted(_:hop:sinkPath:)``), before any event is handed over; then report
        /// ``adopted()``.
        case adopt([IPCMessage.TaskSnapshot])
        /// Send these creations on `connection`, in order; report each answer with ``createAnswered(_:_:on:ended:)``.
        case create([IPCMessage.BackgroundTask], on: Connection, generation: Int)
        /// Hand the batches that arrive on `connection` to ``accept(_:)``.
        case listen(Connection)
        /// Deliver a completion with `error` for each of these tasks.
        case complete([Int: Binding], CourierError)
        /// Tell the delegate `urlSessionDidFinishEvents` after the delegate calls queued so far.
        case finishEvents
        /// Close this connection (it is no longer the link's).
        case close(Connection)
    }

    let requestTimeout: TimeInterval
    let startGrace: TimeInterval
    /// This process was launched for the session's events: the delegate is owed `urlSessionDidFinishEvents` once.
    let relaunched: Bool

    private(set) var phase: Phase = .opening
    /// The tasks courierd runs for this session and that have not completed.
    private(set) var bindings: [Int: Binding] = [:]
    /// Daemon tasks of an earlier run of the app, being recreated: their submission binds, it creates nothing.
    private var beingAdopted: Set<Int> = []
    /// Whether the tasks of an earlier run are being recreated or were (once, after the first listing that answered).
    private var adoptionDone = false
    /// Whether they were recreated (``adoptionPerformed()``): the opening has settled.
    private var adoptionPerformed = false
    /// Counts the connections made; a creation remembers the one it went on.
    private var generation = 0
    /// The tasks courierd had journaled when the last connection ended: those missing from the next listing are lost.
    private var journaledBeforeLoss: Set<Int> = []
    private(set) var lastSequence: UInt64 = 0
    /// What the last batch handed over is to acknowledge (``batchHandedOver(finished:)``).
    private var acknowledgementQueued: UInt64 = 0
    /// The delegate is owed `urlSessionDidFinishEvents` once: the session was opened by an app relaunched for its
    /// events, or in the background to hear a replay (courierd's batch marked `finished`). As on iOS, an app the user
    /// started (in the foreground) hears the events it missed without it, and a replay after a reconnection owes
    /// nothing more.
    private var finishOwed = false

    init(requestTimeout: TimeInterval, startGrace: TimeInterval, relaunched: Bool) {
        self.requestTimeout = requestTimeout
        self.startGrace = startGrace
        self.relaunched = relaunched
    }

    // MARK: What others wait for

    /// The first opening has settled: opened with the earlier run's tasks adopted, or failed. Task identifiers are
    /// courierd's to continue only from then.
    var isSettled: Bool {
        switch phase {
        case .opening: false
        case .open, .reconnecting: adoptionPerformed
        case .unreachable, .failed, .closed: true
        }
    }

    /// Why the first opening failed, once it did.
    var openingFailure: CourierError? {
        if case .failed(let error) = phase {
            return error
        }
        return nil
    }

    /// The connection commands and listings may use now: `.success(nil)` while one is being made.
    var usableConnection: Result<Connection?, CourierError> {
        switch phase {
        case .open(let connection, _): .success(connection)
        case .opening, .reconnecting: .success(nil)
        case .unreachable(let error), .failed(let error): .failure(error)
        case .closed: .failure(CourierError(.sessionInvalidated, "the background session was closed"))
        }
    }

    /// Tasks whose creation courierd has not answered yet.
    var hasUnansweredCreations: Bool {
        bindings.values.contains { !$0.journaled }
    }

    // MARK: Opening and reconnecting

    /// The session is made: its first connection is to be opened, starting courierd if none answers.
    mutating func start() -> [Action] {
        [.connect(startingDaemon: true, firstOpening: true)]
    }

    /// An attempt opened the session on `connection`; courierd's next task identifier is `nextTask`, and
    /// `holdsReplay` says whether it has events to replay. `inForeground`: the application is in the foreground.
    mutating func attemptSucceeded(
        _ connection: Connection,
        nextTask: Int,
        holdsReplay: Bool,
        inForeground: Bool
    ) -> [Action] {
        switch phase {
        case .opening:
            finishOwed = relaunched || (holdsReplay && !inForeground)
        case .reconnecting:
            journaledBeforeLoss = Set(bindings.filter(\.value.journaled).keys)
        case .open, .unreachable, .failed, .closed:
            return [.close(connection)]
        }
        generation += 1
        phase = .open(connection, generation: generation)
        // Creations go out after the listing: one courierd journaled before the old connection ended is known then.
        return [.continueIdentifiers(nextTask), .watch(connection), .list(connection)]
    }

    /// An attempt failed with `error` at `now` (`startedDaemon`: it started courierd, which did not answer). The
    /// first opening fails for good when courierd refused the session or could not be started; a connection that
    /// ended during it (courierd stopping or restarting just then) is made again as after any lost connection.
    mutating func attemptFailed(_ error: CourierError, startedDaemon: Bool, now: Date) -> [Action] {
        switch phase {
        case .opening where error.code == .networkConnectionLost:
            phase = .reconnecting(schedule(lost: now, now: now), attempting: false)
            return [.wake(after: ReconnectSchedule.firstPause)]
        case .opening:
            phase = .failed(error)
            return failAll(error)
        case .reconnecting(var schedule, attempting: true):
            if startedDaemon {
                schedule.startedDaemon(at: now)
            }
            switch schedule.failed(at: now) {
            case .tryAgain(let pause):
                phase = .reconnecting(schedule, attempting: false)
                return [.wake(after: pause)]
            case .giveUp:
                let given = unreachableError(because: error)
                phase = .unreachable(given)
                return failAll(given)
            }
        case .reconnecting, .open, .unreachable, .failed, .closed:
            return []
        }
    }

    /// The timer of ``Action/wake(after:)`` fired.
    mutating func wake(now: Date) -> [Action] {
        guard case .reconnecting(let schedule, attempting: false) = phase else {
            return []
        }
        phase = .reconnecting(schedule, attempting: true)
        return [.connect(startingDaemon: schedule.startsDaemon(at: now), firstOpening: false)]
    }

    /// `connection` ended at `now` (courierd was killed, stopped or restarted): a new one is made at once, and
    /// courierd is started only once none has answered for the start grace.
    mutating func connectionEnded(_ connection: Connection, now: Date) -> [Action] {
        guard case .open(let current, _) = phase, current === connection else {
            return []
        }
        let reconnection = schedule(lost: now, now: now)
        phase = .reconnecting(reconnection, attempting: true)
        return [.connect(startingDaemon: reconnection.startsDaemon(at: now), firstOpening: false)]
    }

    /// A submission or command needs the link: courierd found unreachable before is tried again, and started at once.
    mutating func needed(now: Date) -> [Action] {
        guard case .unreachable = phase else {
            return []
        }
        phase = .reconnecting(schedule(lost: nil, now: now), attempting: true)
        return [.connect(startingDaemon: true, firstOpening: false)]
    }

    /// courierd's list of the session's tasks, asked on `connection` after it opened (a failure: the connection
    /// ended meanwhile, and the next one asks again); `holdsReplay`: courierd's replay of unacknowledged events has
    /// arrived on it. After the first opening, the earlier run's tasks are adopted (and a relaunched app to which
    /// courierd replays nothing hears `urlSessionDidFinishEvents` at once, as on iOS);
    /// after a reconnection, tasks courierd had journaled and no longer knows end with an error, creations it
    /// journaled before the old connection ended count as answered, and the others are sent again. Then the events
    /// the app has not acknowledged come.
    mutating func listed(
        _ listing: Result<[IPCMessage.TaskSnapshot], CourierError>,
        on connection: Connection,
        holdsReplay: Bool
    ) -> [Action] {
        guard case .open(let current, let generation) = phase, current === connection,
            case .success(let snapshots) = listing
        else {
            return []
        }
        var actions: [Action] = []
        let known = Set(snapshots.map(\.identifier))
        if !adoptionDone {
            adoptionDone = true
            beingAdopted = known
            actions.append(.adopt(snapshots))
            if finishOwed, !holdsReplay {
                finishOwed = false
                actions.append(.finishEvents)
            }
        }
        let lost = bindings.filter { journaledBeforeLoss.contains($0.key) && !known.contains($0.key) }
        journaledBeforeLoss = []
        for task in lost.keys {
            bindings[task] = nil
        }
        if !lost.isEmpty {
            actions.append(.complete(lost, CourierError(.unknown, "courierd restarted without this task in its journal")))
        }
        var resend: [IPCMessage.BackgroundTask] = []
        for (task, binding) in bindings.sorted(by: { $0.key < $1.key }) where binding.sentOn != generation {
            guard let creation = binding.creation else {
                continue
            }
            if known.contains(task) {
                bindings[task]?.creation = nil
            } else {
                bindings[task]?.sentOn = generation
                resend.append(creation)
            }
        }
        if !resend.isEmpty {
            actions.append(.create(resend, on: connection, generation: generation))
        }
        actions.append(.listen(connection))
        return actions
    }

    /// The task objects of ``Action/adopt(_:)`` were recreated: the first opening has settled (``isSettled``).
    mutating func adopted() {
        adoptionPerformed = true
    }

    /// The session closes: the link ends for good (the caller frees the identifier).
    mutating func close() -> [Action] {
        defer { phase = .closed }
        if case .open(let connection, _) = phase {
            return [.close(connection)]
        }
        return []
    }

    // MARK: Tasks

    /// Binds `task` if it is a daemon task the app recreated after a relaunch (courierd has it: nothing is sent);
    /// whether it was.
    mutating func bindAdopted(_ task: Int, hop: Int, sinkPath: String?) -> Bool {
        guard beingAdopted.remove(task) != nil else {
            return false
        }
        bindings[task] = Binding(hop: hop, sinkPath: sinkPath)
        return true
    }

    /// What became of a submission.
    enum Submission: Sendable {
        /// Send the creation on this connection now (of this generation).
        case send(Connection, generation: Int)
        /// Kept until a connection is open (`actions` make one if needed).
        case queued([Action])
        case refused(CourierError)
    }

    /// A task of the session is submitted as `task`, its hop `hop`, with `creation` (what courierd journals).
    mutating func submit(
        _ creation: IPCMessage.BackgroundTask,
        hop: Int,
        sinkPath: String?,
        now: Date
    ) -> Submission {
        let task = creation.identifier
        switch phase {
        case .failed(let error):
            return .refused(error)
        case .closed:
            return .refused(CourierError(.sessionInvalidated, "the background session was closed"))
        case .open(let connection, let generation):
            bindings[task] = Binding(hop: hop, sinkPath: sinkPath, creation: creation, sentOn: generation)
            return .send(connection, generation: generation)
        case .opening, .reconnecting, .unreachable:
            bindings[task] = Binding(hop: hop, sinkPath: sinkPath, creation: creation)
            return .queued(needed(now: now))
        }
    }

    /// courierd answered the creation of `task` sent on connection `generation` (`ended`: that connection ended
    /// before the answer, which then says nothing: the creation goes again after the next listing).
    mutating func createAnswered(
        _ task: Int,
        _ answer: Result<Void, CourierError>,
        on generation: Int,
        ended: Bool
    ) -> [Action] {
        guard let binding = bindings[task], !binding.journaled, binding.sentOn == generation else {
            return []
        }
        switch answer {
        case .success:
            bindings[task]?.creation = nil
            return []
        case .failure where ended:
            bindings[task]?.sentOn = nil
            return []
        case .failure(let error):
            bindings[task] = nil
            return [.complete([task: binding], error)]
        }
    }

    // MARK: Events

    /// One event of a batch: the binding of its task when the event is new to this process (nil: delivered before,
    /// or for no task of this session). A completion unbinds the task.
    mutating func accept(_ sequenced: IPCMessage.SequencedEvent) -> Binding? {
        guard sequenced.sequence > lastSequence else {
            return nil
        }
        lastSequence = sequenced.sequence
        let binding = bindings[sequenced.task]
        if sequenced.event.completion != nil {
            bindings[sequenced.task] = nil
        } else if binding != nil {
            bindings[sequenced.task]?.progress = sequenced.event.progress
        }
        return binding
    }

    /// The file of a finished download could not be put where its task expects it.
    mutating func placementFailed(_ task: Int, _ failure: CourierError) {
        bindings[task]?.placementFailure = failure
    }

    /// A batch was handed over: the sequence number to acknowledge once its delegate calls ran (0: nothing), and
    /// whether `urlSessionDidFinishEvents` follows them (the batch was courierd's last pending one, `finished`).
    mutating func batchHandedOver(finished: Bool) -> (acknowledge: UInt64, finishEvents: Bool) {
        let finishes = finished && finishOwed
        if finishes {
            finishOwed = false
        }
        acknowledgementQueued = lastSequence
        return (lastSequence, finishes)
    }

    /// Whether the acknowledgement `through`, due now that its batch's delegate calls ran, is the latest queued: an
    /// earlier one is not sent, since the later one, queued behind it on the same delegate queue, covers it (one
    /// acknowledgement, one journal transaction in courierd, for the batches the delegate took in one go).
    func isLatestAcknowledgement(_ through: UInt64) -> Bool {
        through >= acknowledgementQueued
    }

    // MARK: Helpers

    private mutating func failAll(_ error: CourierError) -> [Action] {
        defer { bindings = [:] }
        return bindings.isEmpty ? [] : [.complete(bindings, error)]
    }

    /// A reconnection beginning `now`, for a connection lost at `lost` (nil: courierd found unreachable before).
    private func schedule(lost: Date?, now: Date) -> ReconnectSchedule {
        ReconnectSchedule(lost: lost, now: now, timeout: requestTimeout, startGrace: startGrace)
    }

    /// What a task gets when courierd could not be reached for the request timeout (`reason`: the last attempt's).
    func unreachableError(because reason: CourierError?) -> CourierError {
        CourierError(
            .backgroundSessionWasDisconnected,
            "courierd could not be reached for \(Int(requestTimeout)) s (the session's request timeout)"
                + (reason.map { ": \($0.message)" } ?? "")
        )
    }
}
