import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The backend of a background session: courierd runs the transfers, this turns the tasks' submissions into
/// journaled daemon tasks and the daemon's journaled events back into ``TransferEvent``s for the same task layer.
///
/// A background task is one exchange as far as the app sees: the daemon follows redirects and retries on its own,
/// so each task has one hop. `submit` returns once the task's creation is written to courierd's socket, without
/// waiting for the answer: courierd journals it (on disk, group commit) before it answers or says anything of it, and
/// a refusal ends the task through its delegate. Each event batch is acknowledged to the daemon after the delegate
/// calls it caused have run (a work item queued behind them), so an app that dies mid-delivery gets the
/// unacknowledged events again; events already delivered in this process are recognised by their sequence number and
/// skipped.
///
/// The session outlives courierd: when the connection ends (courierd was killed, stopped or restarted), the backend
/// connects again (starting courierd if none answers after ``startGrace`` and its state directory is still there),
/// opens the session again and takes the events it has not acknowledged, in order, with nothing for the app to do.
/// Submissions and commands made meanwhile wait for the new connection. Only when courierd cannot be reached for the
/// session's request timeout do the session's tasks fail, with `backgroundSessionWasDisconnected` saying so.
///
/// Commands (`suspend`, `resume`, `cancel`) go to courierd one at a time, in the order the tasks made them.
final class DaemonBackend: TransferBackend {
    /// What the task layer gives the backend: where batches go, and a way to run work after their delegate calls.
    struct Hooks: Sendable {
        var deliver: @Sendable ([TransferEvent]) -> Void
        var afterDelivery: @Sendable (@escaping @Sendable (Session?) -> Void) -> Void
        /// The session was opened again on a new connection; courierd's next task identifier.
        var reopened: @Sendable (Int) -> Void
    }

    /// How long a lost connection is only looked for (courierd restarting by itself, or being restarted) before the
    /// backend starts courierd.
    static let startGrace: TimeInterval = 1

    private struct Binding {
        var hop: Int
        /// The download's staging file: a finished download is placed there.
        var sinkPath: String?
        var progress = TransferProgress()
        /// courierd answered that it journaled the task (false while its creation is on the way).
        var journaled = true
        /// The finished file courierd handed over could not be put in the sink: the task fails with this.
        var placementFailure: CourierError?
    }

    private enum Link {
        case connected(DaemonConnection)
        /// The connection ended: a new one is being made.
        case reconnecting
        /// courierd could not be reached for the request timeout; the next submission or command tries again.
        case unreachable(CourierError)
        /// The session is gone (released, invalidated, or abandoned as a dying app would).
        case closed
    }

    private struct State {
        var link: Link
        /// The tasks courierd runs for this session and that have not completed.
        var bindings: [Int: Binding] = [:]
        /// Daemon tasks of an earlier run of the app, recreated here: their submit binds, it creates nothing.
        var adopted: Set<Int> = []
        /// Tasks whose creation courierd has not answered yet (``waitForAnswers(timeout:)``).
        var unanswered: Set<Int> = []
        var lastSequence: UInt64 = 0
        /// Batches between their arrival and the queueing of their acknowledgement (``afterBatchesHandedOver(_:)``).
        var batchesInDelivery = 0
        /// The session was opened by an app relaunched for this session's events, or in the background to hear a
        /// replay (courierd's batch marked `finished`): the delegate is owed `urlSessionDidFinishEvents` once. As on
        /// iOS, an app the user started (in the foreground) hears the events it missed without it, and a replay after
        /// a reconnection owes nothing more.
        var finishOwed: Bool
    }

    let identifier: String
    private let opener: DaemonSessionOpener
    private let hooks: Hooks
    private let requestTimeout: TimeInterval
    /// The identifier, held for this process's one `Session` of it until ``end()``.
    private let claim: BackgroundIdentifierClaim
    /// Waited on for the answers to creations (``waitForAnswers(timeout:)``) and for a connection while one is being
    /// made (``currentConnection()``).
    private let state: WaitableValue<State>
    /// Runs the commands in order, each waiting for courierd's answer before the next is sent.
    private let commands: DispatchQueue
    /// Makes the connections after the first, one attempt at a time, each after the pause its schedule sets.
    private let linkQueue: DispatchQueue

    /// A backend on `opened`, the session's first connection; `relaunched`: this process was launched for the
    /// session's events (`COURIER_BACKGROUND_LAUNCH=urlsession:<identifier>`).
    init(
        opener: DaemonSessionOpener,
        opened: DaemonSessionOpener.Opened,
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
            State(
                link: .connected(opened.connection),
                finishOwed: relaunched || (opened.connection.holdsReplay && !ApplicationPresence.isInForeground)
            )
        )
        watch(opened.connection)
    }

    deinit {
        if case .connected(let connection) = close() {
            connection.close()
        }
    }

    /// Marks a daemon task the app recreated after a relaunch.
    func adopt(_ task: Int) {
        state.withLock { _ = $0.adopted.insert(task) }
    }

    /// Starts handing the daemon's events to the task layer (after the relaunched app recreated its tasks). An app
    /// relaunched for this session whose events were all acknowledged already (courierd sent no replay) hears
    /// `urlSessionDidFinishEvents` at once: its background task ends, as on iOS.
    func startDelivering() {
        guard case .success(let connection) = currentConnection() else {
            return
        }
        let owedWithoutReplay = state.withLock { state -> Bool in
            guard state.finishOwed, !connection.holdsReplay else {
                return false
            }
            state.finishOwed = false
            return true
        }
        listen(to: connection)
        if owedWithoutReplay {
            hooks.afterDelivery { session in
                if let session, let delegate = session.delegate {
                    delegate.urlSessionDidFinishEvents(forBackgroundURLSession: session)
                }
            }
        }
    }

    /// What courierd knows of this session's tasks: asked on the current connection (waiting for one while the link
    /// reconnects), or only on `connection` (no wait: for the link's own queue, where a reconnection would be queued
    /// behind the wait).
    func taskSnapshots(on connection: DaemonConnection? = nil) -> Result<[IPCMessage.TaskSnapshot], CourierError> {
        Result { () throws(CourierError) in
            try IPCMessage.ListTasks.allPages { offset, limit throws(CourierError) in
                let list = {
                    IPCMessage.listTasks(.init(request: $0, session: self.identifier, offset: offset, limit: limit))
                }
                let answer = connection.map { $0.request(timeout: requestTimeout, list) } ?? request(list)
                switch answer {
                case .success(.tasks(let snapshots)): return snapshots
                case .success:
                    throw CourierError(.badServerResponse, "courierd answered a task listing with something else")
                case .failure(let error): throw error
                }
            }
        }
    }

    /// Ends the link for good: drops the connection without a word and does not connect again (courierd releases the
    /// identifier and keeps the session's unacknowledged events until a new session takes them), and frees the
    /// identifier for another `Session` of this process. When the session was invalidated (after its last delegate
    /// call, every acknowledgement sent) or released, and when a test stands in for an app that is killed.
    func end() {
        if case .connected(let connection) = close() {
            connection.close()
        }
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
        if case .connected(let connection) = takeLink() {
            let received = state.withLock { $0.lastSequence }
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

    /// Marks the backend closed and frees the identifier; returns the link it had.
    private func close() -> Link {
        claim.release()
        return takeLink()
    }

    /// Marks the backend closed; returns the link it had.
    private func takeLink() -> Link {
        state.withLock { state in
            defer { state.link = .closed }
            return state.link
        }
    }

    // MARK: TransferBackend

    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError> {
        var sinkPath: String?
        if case .file(let path, _) = spec.sink {
            sinkPath = path
        }
        let adopted = state.withLock { state -> Bool in
            guard state.adopted.remove(id.task) != nil else {
                return false
            }
            state.bindings[id.task] = Binding(hop: id.hop, sinkPath: sinkPath)
            return true
        }
        if adopted {
            return .success(UInt64(id.task))
        }
        let task: IPCMessage.BackgroundTask
        switch backgroundTask(spec, id: id) {
        case .success(let made): task = made
        case .failure(let error): return .failure(error)
        }
        // Bound first: events of the task may arrive before the answer.
        state.withLock { state in
            state.bindings[id.task] = Binding(hop: id.hop, sinkPath: sinkPath, journaled: false)
            state.unanswered.insert(id.task)
        }
        let session = identifier
        let create: @Sendable (UInt64) -> IPCMessage = { .createTask(.init(request: $0, session: session, task: task)) }
        let connection: DaemonConnection
        switch currentConnection() {
        case .success(let current): connection = current
        case .failure(let error):
            state.withLock { state in
                state.bindings[id.task] = nil
                state.unanswered.remove(id.task)
            }
            return .failure(error)
        }
        // Written before `resume()` returns (an app that exits right after still has its task, as an XPC message
        // sent to nsurlsessiond would); answered later, so that resuming many tasks costs no round trip each.
        let written = connection.send(request: create) { [self] answer in
            self.created(id.task, answer, connection: connection, create: create)
        }
        if !written {
            commands.async { [self] in self.createAgain(id.task, create) }
        }
        return .success(UInt64(id.task))
    }

    /// courierd's answer to the creation of `task`: journaled, refused (the task ends with the error, through its
    /// delegate, as any failure), or lost with the connection (sent again on the next one).
    private func created(
        _ task: Int,
        _ answer: Result<IPCMessage.Reply.Result, CourierError>,
        connection: DaemonConnection,
        create: @escaping @Sendable (UInt64) -> IPCMessage
    ) {
        switch answer {
        case .success:
            answered(task)
        case .failure where connection.hasEnded:
            commands.async { [self] in self.createAgain(task, create) }
        case .failure(let error):
            refused(task, error)
        }
    }

    /// Sends the creation of `task` again (the connection it went on ended before its answer), after every command
    /// made before.
    private func createAgain(_ task: Int, _ create: @escaping @Sendable (UInt64) -> IPCMessage) {
        var answer = request(create)
        if case .failure = answer, journaled(task) {
            // courierd journaled it, then the connection ended before its answer came; the retry on the new
            // connection was refused as a duplicate.
            answer = .success(.taskCreated)
        }
        switch answer {
        case .success:
            answered(task)
        case .failure(let error):
            refused(task, error)
        }
    }

    /// courierd journaled `task`.
    private func answered(_ task: Int) {
        state.withLock { state in
            state.bindings[task]?.journaled = true
            state.unanswered.remove(task)
        }
    }

    /// courierd did not take `task`: it ends with `error`.
    private func refused(_ task: Int, _ error: CourierError) {
        if let binding = state.withLock({ $0.bindings.removeValue(forKey: task) }) {
            complete([task: binding], error: error)
        }
        state.withLock { _ = $0.unanswered.remove(task) }
    }

    /// Returns once courierd has answered the creation of every task resumed so far (each journaled, or ended with
    /// its refusal), or after `timeout`; whether it had.
    func waitForAnswers(timeout: TimeInterval) -> Bool {
        state.wait(atMost: timeout) { $0.unanswered.isEmpty }
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

    /// Whether courierd's journal holds `task` of this session.
    private func journaled(_ task: Int) -> Bool {
        guard case .success(let snapshots) = taskSnapshots() else {
            return false
        }
        return snapshots.contains { $0.identifier == task }
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

    // MARK: The connection

    /// The connection to use now: waits (at most the request timeout) while a new one is being made, and starts
    /// making one when courierd was found unreachable before.
    private func currentConnection() -> Result<DaemonConnection, CourierError> {
        let deadline = Date().addingTimeInterval(requestTimeout)
        let waitDeadline = MonotonicDeadline(after: requestTimeout)
        while true {
            let link = state.withLock { state -> Link in
                if case .unreachable = state.link {
                    state.link = .reconnecting
                    reconnect(after: nil)
                    return .reconnecting
                }
                return state.link
            }
            switch link {
            case .connected(let connection) where !connection.hasEnded:
                return .success(connection)
            case .closed:
                return .failure(CourierError(.sessionInvalidated, "the background session \(identifier) was closed"))
            case .connected, .reconnecting, .unreachable:
                break
            }
            // Woken when the reconnection ends (connected, or courierd unreachable) or the session closes.
            guard Date() < deadline, state.wait(until: { Self.isSettled($0.link) }, deadline: waitDeadline) else {
                return .failure(unreachable(for: requestTimeout, because: nil))
            }
        }
    }

    /// Whether `link` is where a reconnection ends: a live connection, courierd unreachable, or the session closed.
    private static func isSettled(_ link: Link) -> Bool {
        switch link {
        case .connected(let connection): !connection.hasEnded
        case .closed, .unreachable: true
        case .reconnecting: false
        }
    }

    /// Sends a request and waits for its answer; when the connection ends before the answer, sends it again on the
    /// next connection, for as long as courierd keeps going away within the request timeout (a courierd restarted
    /// several times in a row must not end a task as if courierd had refused it).
    private func request(_ make: @escaping (UInt64) -> IPCMessage) -> Result<IPCMessage.Reply.Result, CourierError> {
        let deadline = Date().addingTimeInterval(requestTimeout)
        while true {
            let connection: DaemonConnection
            switch currentConnection() {
            case .success(let current): connection = current
            case .failure(let error): return .failure(error)
            }
            let answer = connection.request(timeout: requestTimeout, make)
            guard case .failure = answer, connection.hasEnded, Date() < deadline else {
                return answer
            }
        }
    }

    /// Reconnects when `connection` ends, unless the backend was closed or moved on to another connection.
    private func watch(_ connection: DaemonConnection) {
        connection.setEndHandler { [weak self, weak connection] in
            guard let self else {
                return
            }
            self.state.withLock { state in
                guard case .connected(let current) = state.link, current === connection else {
                    return
                }
                state.link = .reconnecting
                self.reconnect(after: Date())
            }
        }
    }

    /// Hands the batches that arrive on `connection` to the task layer.
    private func listen(to connection: DaemonConnection) {
        connection.setEventHandler { [weak self, weak connection] events in
            guard let self, let connection else {
                return
            }
            self.receive(events, on: connection)
        }
    }

    /// Makes a new connection on the link's queue, trying again on the timer ``ReconnectSchedule`` sets; courierd is
    /// started when none has answered for ``startGrace`` since the connection ended (`lost`; nil: at once). Gives up
    /// after the request timeout.
    private func reconnect(after lost: Date?) {
        let now = Date()
        let schedule = ReconnectSchedule(lost: lost, now: now, timeout: requestTimeout, startGrace: Self.startGrace)
        linkQueue.async { [weak self] in self?.reconnectOnce(schedule) }
    }

    /// One attempt (the session is strong only for it: a session released meanwhile ends the reconnection); when it
    /// fails, the next is scheduled, or the session gives up.
    private func reconnectOnce(_ schedule: ReconnectSchedule) {
        guard case .reconnecting = state.withLock({ $0.link }) else {
            return
        }
        // Started again only where its state directory is still there: where it is gone (removed by the user, or
        // by a test that is over), a new courierd would know none of the session's tasks.
        let statePresent = FileManager.default.fileExists(atPath: opener.paths.stateDirectory.path)
        let starting = schedule.startsDaemon(at: Date()) && statePresent
        switch opener.open(startingDaemon: starting) {
        case .success(let opened):
            adoptConnection(opened)
        case .failure(let error):
            var next = schedule
            if starting {
                next.startedDaemon(at: Date())
            }
            switch next.failed(at: Date()) {
            case .tryAgain(let pause):
                linkQueue.asyncAfter(deadline: .now() + pause) { [weak self, next] in self?.reconnectOnce(next) }
            case .giveUp:
                giveUp(unreachable(for: requestTimeout, because: error))
            }
        }
    }

    /// The session is open again on `opened`: tasks courierd no longer knows end with an error, then the events the
    /// app has not acknowledged come (those already delivered are skipped by their sequence numbers).
    private func adoptConnection(_ opened: DaemonSessionOpener.Opened) {
        let connection = opened.connection
        // The tasks an earlier courierd journaled, taken before any submission can use the new connection: a task
        // journaled by the new courierd from now on is in its answer to `listTasks` below, or was not asked for yet.
        let earlier = state.withLock { state -> Set<Int>? in
            guard case .reconnecting = state.link else {
                return nil
            }
            state.link = .connected(connection)
            return Set(state.bindings.filter(\.value.journaled).keys)
        }
        guard let earlier else {
            connection.close()
            return
        }
        hooks.reopened(opened.nextTaskIdentifier)
        watch(connection)
        // On this connection only: if it ends meanwhile, its reconnection (queued on this queue) asks again. Waiting
        // here for the next connection would wait for the request timeout, the reconnection queued behind the wait.
        if case .success(let snapshots) = taskSnapshots(on: connection) {
            let known = Set(snapshots.map(\.identifier))
            let lost = state.withLock { state -> [Int: Binding] in
                let lost = state.bindings.filter { earlier.contains($0.key) && !known.contains($0.key) }
                for task in lost.keys {
                    state.bindings[task] = nil
                }
                return lost
            }
            complete(lost, error: CourierError(.unknown, "courierd restarted without this task in its journal"))
        }
        listen(to: connection)
    }

    /// courierd stayed unreachable: every task of the session ends with `error`.
    private func giveUp(_ error: CourierError) {
        let bound = state.withLock { state -> [Int: Binding] in
            guard case .reconnecting = state.link else {
                return [:]
            }
            state.link = .unreachable(error)
            defer { state.bindings = [:] }
            return state.bindings
        }
        complete(bound, error: error)
    }

    private func unreachable(for timeout: TimeInterval, because reason: CourierError?) -> CourierError {
        CourierError(
            .backgroundSessionWasDisconnected,
            "courierd could not be reached for \(Int(timeout)) s (the session's request timeout)"
                + (reason.map { ": \($0.message)" } ?? "")
        )
    }

    /// Delivers a completion with `error` for each of `tasks`.
    private func complete(_ tasks: [Int: Binding], error: CourierError) {
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
        var last: UInt64 = 0
        for sequenced in batch.events {
            guard let binding = state.withLock({ state -> Binding? in
                guard sequenced.sequence > state.lastSequence else {
                    return nil
                }
                state.lastSequence = sequenced.sequence
                let binding = state.bindings[sequenced.task]
                if sequenced.event.completion != nil {
                    state.bindings[sequenced.task] = nil
                }
                return binding
            }) else {
                continue
            }
            last = sequenced.sequence
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
        let (through, finished) = state.withLock { state -> (UInt64, Bool) in
            let finished = batch.finished && state.finishOwed
            if finished {
                state.finishOwed = false
            }
            return (max(last, state.lastSequence), finished)
        }
        hooks.afterDelivery { [identifier] session in
            if through > 0 {
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
    private func transferEvents(_ sequenced: IPCMessage.SequencedEvent, binding: Binding) -> [TransferEvent] {
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
                state.withLock { $0.bindings[task]?.placementFailure = failure }
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
        state.withLock { $0.bindings[task]?.progress = event.progress }
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
            state.withLock { $0.bindings[Int(event.transfer)]?.placementFailure = failure }
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
        unlink(sink)
        guard link(path, sink) != 0 else {
            chmod(sink, FileCreationMask.fileMode)
            return nil
        }
        let linkError = errno
        do {
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
