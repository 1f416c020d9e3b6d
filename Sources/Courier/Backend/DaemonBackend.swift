import CourierConcurrency
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The backend of a background session: courierd runs the transfers, this turns the tasks' submissions into
/// journaled daemon tasks and the daemon's journaled events back into ``TransferEvent``s for the same task layer.
/// Every decision of the link (opening, reconnecting, adoption, which events are new, acknowledgements) is the pure
/// ``DaemonLinkMachine``'s; this carries out its actions: connections are made on the link's queue, frames are written
/// without waiting for answers, and nothing here blocks the caller of `Session.init` or `resume()`.
///
/// A background task is one exchange as far as the app sees: the daemon follows redirects and retries on its own,
/// so each task has one hop. `submit` returns once the task's creation is written to courierd's socket (or kept for
/// the connection being made), without waiting for the answer: courierd journals it (on disk, group commit) before it
/// answers or says anything of it, and a refusal ends the task through its delegate. Each event batch is acknowledged
/// to the daemon after the delegate calls it caused have run (a work item queued behind them), so an app that dies
/// mid-delivery gets the unacknowledged events again; events already delivered in this process are recognised by
/// their sequence number and skipped.
///
/// The session outlives courierd: when the connection ends (courierd was killed, stopped or restarted), the backend
/// connects again (starting courierd if none answers after ``startGrace`` and its state directory is still there),
/// opens the session again and takes the events it has not acknowledged, in order, with nothing for the app to do.
/// Creations made meanwhile are sent on the new connection, commands wait for it on their own queue. Only when
/// courierd cannot be reached for the session's request timeout do the session's tasks fail, with
/// `backgroundSessionWasDisconnected` saying so.
///
/// Commands (`suspend`, `resume`, `cancel`) go to courierd one at a time, in the order the tasks made them.
final class DaemonBackend: TransferBackend {
    typealias Machine = DaemonLinkMachine<DaemonConnection>

    /// What the task layer gives the backend: where batches go, and a way to run work after their delegate calls.
    struct Hooks: Sendable {
        var deliver: @Sendable ([TransferEvent]) -> Void
        var afterDelivery: @Sendable (@escaping @Sendable (Session?) -> Void) -> Void
        /// The session was opened on a connection; courierd's next task identifier.
        var continueIdentifiers: @Sendable (Int) -> Void
        /// Recreate the task objects of an earlier run of the app (after a relaunch), once, after the first opening.
        var adopt: @Sendable ([IPCMessage.TaskSnapshot]) -> Void
        /// The first opening failed: every task of the session fails at `resume()` with this.
        var notOpened: @Sendable (CourierError) -> Void
    }

    /// How long a lost connection is only looked for (courierd restarting by itself, or being restarted) before the
    /// backend starts courierd.
    static let startGrace: TimeInterval = 1

    private struct State {
        var machine: Machine
        /// Batches between their arrival and the queueing of their acknowledgement (``afterBatchesHandedOver(_:)``).
        var batchesInDelivery = 0
        /// Run once the first opening settled (``whenOpened(_:)``).
        var openingWaiters: [@Sendable (CourierError?) -> Void] = []
    }

    let identifier: String
    private let opener: DaemonSessionOpener
    private let hooks: Hooks
    private let requestTimeout: TimeInterval
    /// The identifier, held for this process's one `Session` of it until ``end()``.
    private let claim: BackgroundIdentifierClaim
    /// The link's machine. Waited on (from the backend's own queues and from a task factory before the first opening
    /// settled) for a connection, for the opening, and for the answers to creations.
    private let state: WaitableValue<State>
    /// Runs the commands in order, each waiting for courierd's answer before the next is sent.
    private let commands: DispatchQueue
    /// Makes the connections (one attempt at a time, each after the pause the machine sets) and asks for the tasks.
    private let linkQueue: DispatchQueue
    /// The first opening settled (it never unsettles): what ``waitUntilOpened()`` reads first.
    private let hasSettled = Atomic<Bool>(false)

    /// A backend for `opener`'s session, not yet connected (``start()``); `relaunched`: this process was launched
    /// for the session's events (`COURIER_BACKGROUND_LAUNCH=urlsession:<identifier>`).
    init(
        opener: DaemonSessionOpener,
        claim: BackgroundIdentifierClaim,
        relaunched: Bool,
        requestTimeout: TimeInterval,
        hooks: Hooks
    ) {
        identifier = opener.identifier
        self.opener = opener
        self.claim = claim
        self.hooks = hooks
        self.requestTimeout = requestTimeout
        commands = DispatchQueue(label: "courier.background-commands.\(opener.identifier)")
        linkQueue = DispatchQueue(label: "courier.background-link.\(opener.identifier)")
        state = WaitableValue(
            State(machine: Machine(requestTimeout: requestTimeout, startGrace: Self.startGrace, relaunched: relaunched))
        )
    }

    deinit {
        end()
    }

    /// Starts opening the session on the link's queue: returns at once.
    func start() {
        apply { $0.start() }
    }

    // MARK: The opening

    /// Blocks until the first opening settled (the session opened and an earlier run's tasks were adopted, or it
    /// failed), at most the request timeout and the time courierd takes to start. A task factory waits here before it
    /// numbers a task (the numbers go on from courierd's journal); once settled, a load of ``hasSettled``.
    func waitUntilOpened() {
        guard !hasSettled.load(ordering: .acquiring) else {
            return
        }
        let deadline = MonotonicDeadline(after: requestTimeout + DaemonLauncher.startTimeout)
        if state.wait(until: { $0.machine.isSettled }, deadline: deadline) {
            hasSettled.store(true, ordering: .releasing)
        }
    }

    /// Calls `body` once the first opening settled (at once if it has), with the opening's failure if any: on the
    /// link's queue, or on the caller's thread when it had settled.
    func whenOpened(_ body: @escaping @Sendable (CourierError?) -> Void) {
        let settled = state.withLock { state -> CourierError?? in
            guard state.machine.isSettled else {
                state.openingWaiters.append(body)
                return nil
            }
            return .some(state.machine.openingFailure)
        }
        if let failure = settled {
            body(failure)
        }
    }

    // MARK: The machine's actions

    /// Applies an input to the machine and carries out its actions, then runs the opening's waiters if it settled.
    private func apply(_ input: (inout Machine) -> [Machine.Action]) {
        let (actions, settled) = state.withLock { state in (input(&state.machine), Self.takeWaiters(&state)) }
        perform(actions)
        settled()
    }

    /// The opening's waiters, once the machine settled (taken: each runs once), as one call to make outside the lock.
    private static func takeWaiters(_ state: inout State) -> @Sendable () -> Void {
        guard state.machine.isSettled, !state.openingWaiters.isEmpty else {
            return {}
        }
        let (waiters, failure) = (state.openingWaiters, state.machine.openingFailure)
        state.openingWaiters = []
        return {
            for waiter in waiters {
                waiter(failure)
            }
        }
    }

    private func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .connect(let startingDaemon, let firstOpening):
                linkQueue.async { [weak self] in self?.attempt(startingDaemon: startingDaemon, first: firstOpening) }
            case .wake(let pause):
                linkQueue.asyncAfter(deadline: .now() + pause) { [weak self] in self?.apply { $0.wake(now: Date()) } }
            case .watch(let connection):
                connection.setEndHandler { [weak self, weak connection] in
                    guard let self, let connection else {
                        return
                    }
                    self.apply { $0.connectionEnded(connection, now: Date()) }
                }
            case .continueIdentifiers(let next):
                hooks.continueIdentifiers(next)
            case .list(let connection):
                linkQueue.async { [weak self] in
                    guard let self else {
                        return
                    }
                    let listing = self.taskSnapshots(on: connection)
                    let replay = connection.holdsReplay
                    self.apply { $0.listed(listing, on: connection, holdsReplay: replay) }
                }
            case .adopt(let snapshots):
                hooks.adopt(snapshots)
                // Settled now that the task objects exist: `getAllTasks` calls waiting for it see them.
                let settled = state.withLock { state in
                    state.machine.adopted()
                    return Self.takeWaiters(&state)
                }
                settled()
            case .create(let creations, let connection, let generation):
                for creation in creations {
                    send(creation, on: connection, generation: generation)
                }
            case .listen(let connection):
                connection.setEventHandler { [weak self, weak connection] events in
                    guard let self, let connection else {
                        return
                    }
                    self.receive(events, on: connection)
                }
            case .complete(let tasks, let error):
                complete(tasks, error: error)
            case .finishEvents:
                hooks.afterDelivery { session in
                    if let session, let delegate = session.delegate {
                        delegate.urlSessionDidFinishEvents(forBackgroundURLSession: session)
                    }
                }
            case .close(let connection):
                connection.close()
            }
        }
    }

    /// One attempt to open the session, on the link's queue (the backend is strong only for it). courierd is started
    /// again only where its state directory is still there: where it is gone (removed by the user, or by a test that
    /// is over), a new courierd would know none of the session's tasks.
    private func attempt(startingDaemon: Bool, first: Bool) {
        let starting =
            startingDaemon && (first || FileManager.default.fileExists(atPath: opener.paths.stateDirectory.path))
        switch opener.open(startingDaemon: starting) {
        case .success(let opened):
            let connection = opened.connection
            apply {
                $0.attemptSucceeded(
                    connection,
                    nextTask: opened.nextTaskIdentifier,
                    holdsReplay: connection.holdsReplay,
                    inForeground: ApplicationPresence.isInForeground
                )
            }
        case .failure(let error):
            apply { $0.attemptFailed(error, startedDaemon: starting, now: Date()) }
            if first, let failure = state.withLock({ $0.machine.openingFailure }) {
                hooks.notOpened(failure)
            }
        }
    }

    /// Sends the creation on `connection` without waiting for courierd's answer, which the machine is told of.
    private func send(_ creation: IPCMessage.BackgroundTask, on connection: DaemonConnection, generation: Int) {
        let session = identifier
        let task = creation.identifier
        let written = connection.send(request: { .createTask(.init(request: $0, session: session, task: creation)) }) {
            [weak self, weak connection] answer in
            let ended = connection?.hasEnded ?? true
            self?.apply { $0.createAnswered(task, answer.map { _ in () }, on: generation, ended: ended) }
        }
        if !written {
            let lost = CourierError(.networkConnectionLost, "the connection to courierd ended")
            apply { $0.createAnswered(task, .failure(lost), on: generation, ended: true) }
        }
    }

    /// What courierd knows of this session's tasks, asked on `connection` (no wait for another: on the link's queue,
    /// where a reconnection would be queued behind the wait).
    private func taskSnapshots(on connection: DaemonConnection) -> Result<[IPCMessage.TaskSnapshot], CourierError> {
        Result { () throws(CourierError) in
            try IPCMessage.ListTasks.allPages { offset, limit throws(CourierError) in
                let answer = connection.request(timeout: requestTimeout) {
                    IPCMessage.listTasks(.init(request: $0, session: self.identifier, offset: offset, limit: limit))
                }
                switch answer {
                case .success(.tasks(let snapshots)): return snapshots
                case .success:
                    throw CourierError(.badServerResponse, "courierd answered a task listing with something else")
                case .failure(let error): throw error
                }
            }
        }
    }

    // MARK: Ending

    /// Ends the link for good: drops the connection without a word and does not connect again (courierd releases the
    /// identifier and keeps the session's unacknowledged events until a new session takes them), and frees the
    /// identifier for another `Session` of this process. When the session was invalidated (after its last delegate
    /// call, every acknowledgement sent) or released, and when a test stands in for an app that is killed.
    func end() {
        claim.release()
        perform(state.withLock { $0.machine.close() })
    }

    /// Runs `body` on a queue of its own once every batch received so far has its acknowledgement queued behind its
    /// delegate calls (a task's completion is queued as soon as its batch reaches it, the acknowledgement at the
    /// batch's end): work queued by `body` on the delegate queue then comes after those acknowledgements.
    func afterBatchesHandedOver(_ body: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async { [state] in
            _ = state.wait(until: { $0.batchesInDelivery == 0 }, deadline: MonotonicDeadline(after: 5))
            body()
        }
    }

    /// Ends the link once courierd has taken everything sent on it: the session is closed by a request whose answer
    /// courierd sends after handling the frames before it (the acknowledgements of the last batches), at most
    /// `timeout` seconds; then the identifier is free. Without it, a `Session` made with the identifier right after
    /// could open it on a new connection before courierd read the old one's last acknowledgements, and be handed
    /// again events this one had acknowledged. Called by the invalidation, on the delegate queue after the last
    /// acknowledgement was sent.
    ///
    /// With `acknowledgingAll` (the invalidation, once no task is left: every event received was delivered, or is for
    /// no task of this session), everything received is acknowledged first. A batch's acknowledgement is queued behind
    /// its delegate calls, but a task's completion is queued as soon as the batch reaches it: an app that invalidates
    /// from its last `didCompleteWithError` queues its invalidation before that batch's acknowledgement, which would
    /// then find the link gone, and the next session of the identifier would hear the batch again.
    func finish(within timeout: TimeInterval = 5, acknowledgingAll: Bool = false) {
        let (connection, received) = state.withLock { state -> (DaemonConnection?, UInt64) in
            var open: DaemonConnection?
            if case .open(let connection, _) = state.machine.phase {
                open = connection
            }
            _ = state.machine.close()
            return (open, state.machine.lastSequence)
        }
        if let connection {
            if acknowledgingAll, received > 0, !connection.hasEnded {
                connection.send(.acknowledge(.init(session: identifier, through: received)))
            }
            if !connection.hasEnded {
                _ = connection.request(timeout: timeout) { [identifier] number in
                    .closeSession(.init(request: number, session: identifier, cancelTasks: false))
                }
            }
            connection.close()
        }
        claim.release()
    }

    // MARK: TransferBackend

    /// Binds the task and sends its creation without waiting for courierd's answer (courierd journals it, on disk,
    /// before it answers or says anything of it; a refusal ends the task through its delegate), or keeps it for the
    /// connection being made. Never blocks.
    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError> {
        var sinkPath: String?
        if case .file(let path, _) = spec.sink {
            sinkPath = path
        }
        if state.withLock({ $0.machine.bindAdopted(id.task, hop: id.hop, sinkPath: sinkPath) }) {
            return .success(UInt64(id.task))
        }
        let creation: IPCMessage.BackgroundTask
        switch backgroundTask(spec, id: id) {
        case .success(let made): creation = made
        case .failure(let error): return .failure(error)
        }
        // Bound first: events of the task may arrive before the answer.
        switch state.withLock({ $0.machine.submit(creation, hop: id.hop, sinkPath: sinkPath, now: Date()) }) {
        case .send(let connection, let generation):
            // Written before `resume()` returns (an app that exits right after still has its task, as an XPC message
            // sent to nsurlsessiond would); answered later, so that resuming many tasks costs no round trip each.
            send(creation, on: connection, generation: generation)
        case .queued(let actions):
            perform(actions)
        case .refused(let error):
            return .failure(error)
        }
        return .success(UInt64(id.task))
    }

    /// Returns once courierd has answered the creation of every task resumed so far (each journaled, or ended with
    /// its refusal), or after `timeout`; whether it had.
    func waitForAnswers(timeout: TimeInterval) -> Bool {
        state.wait(atMost: timeout) { !$0.machine.hasUnansweredCreations }
    }

    /// A download asked for resume data (`cancel(byProducingResumeData:)`) is cancelled by courierd with resume data
    /// naming its partial file; any other is just cancelled.
    func cancel(_ transfer: UInt64, producingResumeData: Bool) {
        command(producingResumeData ? .cancelProducingResumeData : .cancel, transfer)
    }

    func pause(_ transfer: UInt64) {
        command(.suspend, transfer)
    }

    func resume(_ transfer: UInt64) {
        command(.resume, transfer)
    }

    /// courierd reads every body from a file: a background task never has a streamed one (the task refuses it).
    func supply(_ transfer: UInt64, _ bytes: Data, end: Bool) -> Bool {
        false
    }

    /// Background transfers never hold a response; the one thing courierd waits for is the answer to a delayed
    /// task's `delayedStart`.
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError? {
        if case .beginDelayed(let request) = decision {
            let task = Int(transfer)
            let session = identifier
            commands.async { [self] in
                _ = self.request {
                    .command(.init(request: $0, session: session, task: task, verb: .beginDelayed, newRequest: request))
                }
            }
        }
        return nil
    }

    /// Sends the command after every command made before it was answered.
    private func command(_ verb: IPCMessage.Command.Verb, _ transfer: UInt64) {
        let task = Int(transfer)
        commands.async { [self] in
            _ = request { .command(.init(request: $0, session: self.identifier, task: task, verb: verb)) }
        }
    }

    /// The daemon task for a submission, or the background rule it breaks.
    private func backgroundTask(_ spec: TransferSpec, id: TransferID) -> Result<IPCMessage.BackgroundTask, CourierError> {
        let url = URL(string: spec.url)
        guard let details = spec.task, details.reportsToDelegate else {
            return .failure(BackgroundTaskRules.completionHandlerRefused(url))
        }
        switch (spec.body, spec.sink) {
        case (.none, .file), (.file, _):
            break
        case (.none, .memory) where details.kind == .data:
            // Beyond Apple: courierd runs a data task to a file of its own, and the body comes back as data
            // (``bodyEvents(of:for:)``).
            break
        case (.data, _), (.streamed, _):
            // An upload from `Data` sends a file its task wrote (`SessionTask.prepare`); a stream cannot be kept.
            return .failure(BackgroundTaskRules.uploadNotFromFile(url))
        default:
            return .failure(BackgroundTaskRules.dataTaskRefused(url))
        }
        guard url != nil else {
            return .failure(CourierError(.badURL, "the URL \(spec.url) does not parse"))
        }
        return .success(IPCMessage.BackgroundTask(identifier: id.task, spec: spec))
    }

    // MARK: Commands

    /// The connection commands use now: waits (on the commands' queue, at most the request timeout) while one is being
    /// made, and has one made when courierd was found unreachable before.
    private func currentConnection() -> Result<DaemonConnection, CourierError> {
        apply { $0.needed(now: Date()) }
        let settled = state.wait(
            until: { state in
                switch state.machine.usableConnection {
                case .success(let connection?): !connection.hasEnded
                case .success(nil): false
                case .failure: true
                }
            },
            deadline: MonotonicDeadline(after: requestTimeout)
        )
        switch state.withLock({ $0.machine.usableConnection }) {
        case .success(let connection?) where settled:
            return .success(connection)
        case .failure(let error):
            return .failure(error)
        case .success:
            return .failure(state.withLock { $0.machine.unreachableError(because: nil) })
        }
    }

    /// Sends a request and waits for its answer; when the connection ends before the answer, sends it again on the
    /// next connection, for as long as courierd keeps going away within the request timeout (a courierd restarted
    /// several times in a row must not end a task as if courierd had refused it).
    private func request(_ make: @escaping (UInt64) -> IPCMessage) -> Result<IPCMessage.Reply.Result, CourierError> {
        let deadline = MonotonicDeadline(after: requestTimeout)
        while true {
            let connection: DaemonConnection
            switch currentConnection() {
            case .success(let current): connection = current
            case .failure(let error): return .failure(error)
            }
            let answer = connection.request(timeout: requestTimeout, make)
            guard case .failure = answer, connection.hasEnded, deadline.remaining > 0 else {
                return answer
            }
        }
    }

    /// Delivers a completion with `error` for each of `tasks`.
    private func complete(_ tasks: [Int: Machine.Binding], error: CourierError) {
        guard !tasks.isEmpty else {
            return
        }
        hooks.deliver(
            tasks.sorted { $0.key < $1.key }.map { task, binding in
                TransferEvent(
                    id: TransferID(task: task, hop: binding.hop),
                    transfer: UInt64(task),
                    progress: binding.progress,
                    payload: .complete(TransferCompletion(error: error))
                )
            }
        )
    }

    // MARK: Events

    /// One batch from the daemon, on the reader thread of the connection it came on (which acknowledges it).
    private func receive(_ batch: IPCMessage.Events, on connection: DaemonConnection) {
        state.withLock { $0.batchesInDelivery += 1 }
        defer { state.withLock { $0.batchesInDelivery -= 1 } }
        var events: [TransferEvent] = []
        for sequenced in batch.events {
            guard let binding = state.withLock({ $0.machine.accept(sequenced) }) else {
                continue
            }
            events += transferEvents(sequenced, binding: binding)
        }
        // In the background (courierd continued the suspended application for these events), the application holds a
        // background task until their delegate calls have run; then it may be suspended again.
        let holding =
            events.isEmpty || ApplicationPresence.isInForeground
            ? nil : Application.shared.beginBackgroundTask(withName: "background session events")
        if !events.isEmpty {
            hooks.deliver(events)
        }
        let (through, finished) = state.withLock { $0.machine.batchHandedOver(finished: batch.finished) }
        hooks.afterDelivery { [identifier, state] session in
            if through > 0, state.withLock({ $0.machine.isLatestAcknowledgement(through) }) {
                connection.send(.acknowledge(.init(session: identifier, through: through)))
            }
            if finished, let session, let delegate = session.delegate {
                delegate.urlSessionDidFinishEvents(forBackgroundURLSession: session)
            }
            if let holding {
                Application.shared.endBackgroundTask(holding)
            }
        }
    }

    /// The task-layer event for one daemon event (none for the file of a finished download, which is put in the
    /// task's sink instead).
    private func transferEvents(_ sequenced: IPCMessage.SequencedEvent, binding: Machine.Binding) -> [TransferEvent] {
        let task = sequenced.task
        var event = TransferEvent(
            id: TransferID(task: task, hop: binding.hop),
            transfer: UInt64(task),
            progress: sequenced.event.progress,
            payload: sequenced.event.payload
        )
        switch event.payload {
        case .downloaded(let path) where binding.sinkPath == nil:
            // A data task's body, from courierd's file (the file stays courierd's until the acknowledgement).
            return bodyEvents(of: path, for: event)
        case .downloaded(let path):
            if let failure = place(path, at: binding.sinkPath) {
                state.withLock { $0.machine.placementFailed(task, failure) }
            }
            return []
        case .complete(var completion):
            if let sink = binding.sinkPath {
                completion.bytesOnDisk = FileManager.default.fileLength(atPath: sink) ?? 0
            }
            // A download courierd finished whose file did not reach the task fails, never ends with no file.
            if completion.error == nil, let failure = binding.placementFailure {
                completion.error = failure
            }
            event.payload = .complete(completion)
        default:
            break
        }
        return [event]
    }

    /// A background data task's body as DATA events of at most 1 MiB, read from courierd's finished file; a file that
    /// cannot be read makes the task fail at its COMPLETE.
    private func bodyEvents(of path: String, for event: TransferEvent) -> [TransferEvent] {
        var events: [TransferEvent] = []
        do {
            // Read a piece at a time: the body is held once, as the events that carry it.
            let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? file.close() }
            while let piece = try file.read(upToCount: 1 << 20), !piece.isEmpty {
                var data = event
                data.payload = .data(piece)
                events.append(data)
            }
        } catch {
            let failure = CourierError(
                .fileDoesNotExist,
                "courierd's finished file \(path) could not be read by the app: \(error)"
            )
            state.withLock { $0.machine.placementFailed(Int(event.transfer), failure) }
            return []
        }
        return events
    }

    /// Puts the daemon's finished file where the task expects its download: a hard link when both are on one file
    /// system, else a copy. The daemon's file stays until the acknowledgement (a replay after a crash needs it).
    /// Returns why it could not, if it could not. The file gets the mode a file of this app gets (0666 less its
    /// umask), as an in-process download's does, not courierd's.
    private func place(_ path: String, at sink: String?) -> CourierError? {
        guard let sink else {
            return nil
        }
        // A replayed event finds the link it made before: made again, to the file courierd has now.
        var linked = link(path, sink) == 0
        if !linked, errno == EEXIST {
            unlink(sink)
            linked = link(path, sink) == 0
        }
        guard !linked else {
            chmod(sink, FileCreationMask.fileMode)
            return nil
        }
        let linkError = errno
        do {
            unlink(sink)
            try FileManager.default.copyItem(atPath: path, toPath: sink)
            chmod(sink, FileCreationMask.fileMode)
            return nil
        } catch {
            let gone = linkError == ENOENT
            return CourierError(
                gone ? .fileDoesNotExist : .cannotCreateFile,
                gone
                    ? "courierd's finished file \(path) is gone before the app took it"
                    : "courierd's finished file \(path) could not be linked or copied to \(sink): "
                        + String(cString: strerror(linkError)),
                osError: linkError
            )
        }
    }
}
