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
/// so each task has one hop. `submit` returns once courierd has journaled the task (the task is durable when
/// `resume()` returns). Each event batch is acknowledged to the daemon after the delegate calls it caused have run
/// (a work item queued behind them), so an app that dies mid-delivery gets the unacknowledged events again; events
/// already delivered in this process are recognised by their sequence number and skipped.
final class DaemonBackend: TransferBackend {
    /// What the task layer gives the backend: where batches go, and a way to run work after their delegate calls.
    struct Hooks: Sendable {
        var deliver: @Sendable ([TransferEvent]) -> Void
        var afterDelivery: @Sendable (@escaping @Sendable (Session?) -> Void) -> Void
        var task: @Sendable (Int) -> SessionTask?
    }

    private struct Binding {
        var hop: Int
        /// The download's staging file: a finished download is placed there.
        var sinkPath: String?
        var progress = TransferProgress()
    }

    private struct State {
        var bindings: [Int: Binding] = [:]
        /// Daemon tasks of an earlier run of the app, recreated here: their submit binds, it creates nothing.
        var adopted: Set<Int> = []
        var lastSequence: UInt64 = 0
    }

    let identifier: String
    let connection: DaemonConnection
    private let hooks: Hooks
    private let state = LockedValue(State())

    init(identifier: String, connection: DaemonConnection, hooks: Hooks) {
        self.identifier = identifier
        self.connection = connection
        self.hooks = hooks
    }

    deinit {
        connection.close()
    }

    /// Marks a daemon task the app recreated after a relaunch.
    func adopt(_ task: Int) {
        state.withLock { _ = $0.adopted.insert(task) }
    }

    /// Starts handing the daemon's events to the task layer (after the relaunched app recreated its tasks).
    func startDelivering() {
        connection.setEventHandler { [weak self] events in
            self?.receive(events)
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
        let answer = connection.request { .createTask(.init(request: $0, session: identifier, task: task)) }
        switch answer {
        case .success:
            state.withLock { $0.bindings[id.task] = Binding(hop: id.hop, sinkPath: sinkPath) }
            return .success(UInt64(id.task))
        case .failure(let error):
            return .failure(error)
        }
    }

    /// A download whose task was asked for resume data (`cancel(byProducingResumeData:)`) is cancelled by courierd
    /// with resume data naming its partial file; any other is just cancelled.
    func cancel(_ transfer: UInt64) {
        let task = hooks.task(Int(transfer))
        let wantsResumeData = task?.kind == .download && task?.storage.withLock({ $0.resumeDataHandler != nil }) == true
        command(wantsResumeData ? .cancelProducingResumeData : .cancel, transfer)
    }

    func pause(_ transfer: UInt64) {
        command(.suspend, transfer)
    }

    func resume(_ transfer: UInt64) {
        command(.resume, transfer)
    }

    /// Background transfers never hold a response: there is nothing to decide.
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError? {
        nil
    }

    private func command(_ verb: IPCMessage.Command.Verb, _ transfer: UInt64) {
        let task = Int(transfer)
        DispatchQueue.global().async { [connection, identifier] in
            _ = connection.request { .command(.init(request: $0, session: identifier, task: task, verb: verb)) }
        }
    }

    /// The daemon task for a submission, or the background rule it breaks.
    private func backgroundTask(_ spec: TransferSpec, id: TransferID) -> Result<IPCMessage.BackgroundTask, CourierError> {
        let url = URL(string: spec.url)
        guard let sessionTask = hooks.task(id.task), case .delegate = sessionTask.sink else {
            return .failure(
                CourierError(
                    .unsupportedInBackgroundSession,
                    "completion handlers are not supported in background sessions; use the session delegate",
                    failingURL: url
                )
            )
        }
        let kind: IPCMessage.BackgroundTask.Kind
        var uploadFile: String?
        switch (spec.body, spec.sink) {
        case (.none, .file):
            kind = .download
        case (.file(let path), _):
            kind = .upload
            uploadFile = path
        case (.data, _):
            return .failure(
                CourierError(
                    .unsupportedInBackgroundSession,
                    "background sessions upload from a file only (uploadTask(with:fromFile:))",
                    failingURL: url
                )
            )
        default:
            return .failure(
                CourierError(
                    .unsupportedInBackgroundSession,
                    "background sessions run download tasks and upload tasks, not data tasks",
                    failingURL: url
                )
            )
        }
        guard let url else {
            return .failure(CourierError(.badURL, "the URL \(spec.url) does not parse"))
        }
        var fields: [String: String] = [:]
        for line in spec.headers {
            guard let colon = line.firstIndex(of: ":") else {
                continue
            }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            // As `URLRequest.addValue`: a repeated name gets the values joined.
            fields[name] = fields[name].map { "\($0),\(value)" } ?? value
        }
        let request = TaskRequest(url: url, method: spec.method, headerFields: fields)
        return .success(
            IPCMessage.BackgroundTask(
                identifier: id.task,
                kind: kind,
                request: request,
                uploadFile: uploadFile,
                // From `downloadTask(withResumeData:)`: courierd resumes from its partial file.
                resumeData: sessionTask.storage.withLock { $0.resumeSource }?.encoded(),
                taskDescription: sessionTask.taskDescription,
                priority: sessionTask.priority
            )
        )
    }

    // MARK: Events

    /// One batch from the daemon, on the connection's reader thread.
    private func receive(_ batch: IPCMessage.Events) {
        var events: [TransferEvent] = []
        var last: UInt64 = 0
        for sequenced in batch.events {
            guard let binding = state.withLock({ state -> Binding? in
                guard sequenced.sequence > state.lastSequence else {
                    return nil
                }
                state.lastSequence = sequenced.sequence
                return state.bindings[sequenced.task]
            }) else {
                continue
            }
            last = sequenced.sequence
            events += transferEvents(sequenced, binding: binding)
        }
        if !events.isEmpty {
            hooks.deliver(events)
        }
        let through = max(last, state.withLock { $0.lastSequence })
        let finished = batch.finished
        hooks.afterDelivery { [connection, identifier] session in
            if through > 0 {
                connection.send(.acknowledge(.init(session: identifier, through: through)))
            }
            if finished, let session, let delegate = session.delegate {
                delegate.urlSessionDidFinishEvents(forBackgroundURLSession: session)
            }
        }
    }

    /// The task-layer events for one daemon event: none, one, or (for the final response) where courierd's
    /// redirects led, then the response.
    private func transferEvents(_ sequenced: IPCMessage.SequencedEvent, binding: Binding) -> [TransferEvent] {
        let task = sequenced.task
        var progress = binding.progress
        let payload: TransferEvent.Payload
        var relocation: TransferEvent.Payload?
        switch sequenced.event {
        case .wroteData(_, let total, let expected):
            progress.received = total
            progress.expectedToReceive = expected
            payload = .progress
        case .sentBodyData(_, let total, let expected):
            progress.sent = total
            progress.expectedToSend = expected
            payload = .progress
        case .resumed(let offset, let expectedTotal):
            // courierd went on from its partial file (after a restart, or from resume data): didResumeAtOffset.
            progress.received = offset
            payload = .resumed(offset: offset, expectedTotal: expectedTotal)
        case .response(let response):
            relocation = .relocated(url: response.url)
            payload = .response(held: false, resumeOffset: 0, head: ResponseHead(status: response.status, fields: response.headers))
        case .receivedData(let data):
            payload = .data(data)
        case .finishedDownloading(let path):
            place(path, at: binding.sinkPath)
            return []
        case .completed(let error):
            var completion = TransferCompletion(error: error)
            if let sink = binding.sinkPath {
                completion.bytesOnDisk = FileManager.default.fileLength(atPath: sink) ?? 0
            }
            payload = .complete(completion)
        }
        state.withLock { $0.bindings[task]?.progress = progress }
        let id = TransferID(task: task, hop: binding.hop)
        return [relocation, payload].compactMap { payload in
            payload.map { TransferEvent(id: id, transfer: UInt64(task), progress: progress, payload: $0) }
        }
    }

    /// Puts the daemon's finished file where the task expects its download: a hard link when both are on one file
    /// system, else a copy. The daemon's file stays until the acknowledgement (a replay after a crash needs it).
    private func place(_ path: String, at sink: String?) {
        guard let sink else {
            return
        }
        unlink(sink)
        if link(path, sink) != 0 {
            try? FileManager.default.copyItem(atPath: path, toPath: sink)
        }
    }
}
