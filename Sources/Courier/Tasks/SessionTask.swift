import CourierConcurrency
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A transfer made by a ``Session``: the common base of ``DataTask``, ``UploadTask`` and ``DownloadTask``.
///
/// Tasks start ``State-swift.enum/suspended``; ``resume()`` submits them. A task that was never resumed holds
/// only Swift values. All members are thread-safe.
///
/// `@unchecked Sendable`: every mutable property lives in `TaskMachine` behind the `storage` mutex; the other stored
/// properties are immutable `Sendable` values.
public class SessionTask: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// Where a task is in its life.
    public enum State: Int, Sendable {
        case running = 0
        case suspended = 1
        case canceling = 2
        case completed = 3
    }

    public static let defaultPriority: Float = 0.5
    public static let lowPriority: Float = 0
    public static let highPriority: Float = 1
    /// The value of the byte counts when the length is not known.
    public static let transferSizeUnknown: Int64 = -1

    enum Kind: Sendable {
        case data
        case upload
        case download
    }

    /// Unique within the task's session.
    public let taskIdentifier: Int
    let core: SessionCore
    let kind: Kind
    /// The key of the task in the session registry and in its transfers' ``TransferID``.
    let registryKey: Int
    let sink: TaskSink
    let uploadBody: UploadBody?
    /// Every decision and every mutable property of the task: one machine behind one lock.
    let storage: LockedValue<TaskMachine>

    init(
        core: SessionCore,
        kind: Kind,
        identifier: Int,
        registryKey: Int? = nil,
        request: TaskRequest?,
        sink: TaskSink,
        uploadBody: UploadBody? = nil,
        machine initial: TaskMachine? = nil
    ) {
        self.core = core
        self.kind = kind
        self.taskIdentifier = identifier
        self.registryKey = registryKey ?? identifier
        self.sink = sink
        self.uploadBody = uploadBody
        if let initial {
            self.storage = LockedValue(initial)
            return
        }
        var machine = TaskMachine(
            role: SessionTask.role(kind: kind, sink: sink, core: core, request: request),
            request: request
        )
        if machine.role.cacheMode != nil, let cache = core.configuration.urlCache {
            machine.cacheEntryLimit = cache.entryLimit
        }
        if let uploadBody {
            machine.expectedToSend = uploadBody.length
        } else if let length = request?.body?.count, length > 0 {
            machine.expectedToSend = Int64(length)
        }
        self.storage = LockedValue(machine)
    }

    /// Whether a task of `kind` reporting to `sink` holds its final response for a data delegate's disposition:
    /// a data or upload task whose body goes to the delegate, when a data delegate hears it (the session's, or the
    /// task's own: ``delegate``).
    static func asksDisposition(kind: Kind, sink: TaskSink, dataDelegate: Bool) -> Bool {
        kind != .download && sink.usesDelegateForBody && dataDelegate
    }

    /// What a task of `kind` reporting to `sink` is, for its machine.
    static func role(kind: Kind, sink: TaskSink, core: SessionCore, request: TaskRequest? = nil) -> TaskMachine.Role {
        let configuration = core.configuration
        var role = TaskMachine.Role(
            kind: kind,
            collectsBody: sink.collectsBody,
            asksDisposition: asksDisposition(kind: kind, sink: sink, dataDelegate: core.isDataDelegate),
            waitsForConnectivity: configuration.waitsForConnectivity && configuration.identifier == nil
        )
        // Data and upload tasks of a session with a cache (an upload's success invalidates its URL); never a WebSocket.
        if kind != .download, configuration.identifier == nil, configuration.urlCache != nil, !sink.isWebSocket {
            let policy = request?.cachePolicy ?? .useProtocolCachePolicy
            role.cacheMode = HTTPCacheRules.Mode(
                policy == .useProtocolCachePolicy ? configuration.requestCachePolicy : policy
            )
        }
        return role
    }

    // MARK: Public properties

    /// The request the task was created with.
    public var originalRequest: URLRequest? {
        storage.withLock { $0.originalRequest }?.urlRequest
    }

    /// The request of the current hop (after redirects).
    public var currentRequest: URLRequest? {
        storage.withLock { $0.currentRequest }?.urlRequest
    }

    /// The final response, once it arrived.
    public var response: URLResponse? {
        storage.withLock { $0.finalResponse }?.httpResponse
    }

    /// An app-defined description, e.g. an identifier that outlives the task.
    public var taskDescription: String? {
        get { storage.withLock { $0.taskDescription } }
        set { storage.withLock { $0.taskDescription = newValue } }
    }

    /// 0 (low) ... 1 (high); among queued transfers the engine starts higher priorities first. Read when a
    /// hop is submitted.
    public var priority: Float {
        get { storage.withLock { $0.priority } }
        set { storage.withLock { $0.priority = min(max(newValue, 0), 1) } }
    }

    /// The most bytes per second this task receives, and sends (each direction on its own), or nil (the default) for
    /// no limit of its own; the session's ``SessionConfiguration/bandwidthLimit`` (or courierd's `--limit-rate`)
    /// applies as well. Read when a hop is submitted: set it before `resume()`. Held by libcurl over each second.
    public var maximumBytesPerSecond: Int64? {
        get { storage.withLock { $0.maximumBytesPerSecond } }
        set { storage.withLock { $0.maximumBytesPerSecond = newValue.flatMap { $0 > 0 ? $0 : nil } } }
    }

    /// For a task of a background session: courierd begins its transfer no sooner than this date (it is not a
    /// promise that it begins then), and first asks the delegate with
    /// ``SessionTaskDelegate/urlSession(_:task:willBeginDelayedRequest:completionHandler:)``. Set it before `resume()`;
    /// nil (the default) begins at once. As on iOS, it has no effect on tasks of other sessions.
    public var earliestBeginDate: Date? {
        get { storage.withLock { $0.earliestBeginDate } }
        set { storage.withLock { $0.earliestBeginDate = newValue } }
    }

    /// A best guess of the most bytes the task will send (request headers and body), or
    /// ``transferSizeUnknown`` (the default). courierd schedules a background task by it: among tasks that start
    /// together, smaller ones first; a discretionary task that declares at most 1 MiB in all does not wait for an
    /// unmetered network or external power. `courier tasks` shows it. Set it before `resume()`.
    public var countOfBytesClientExpectsToSend: Int64 {
        get { storage.withLock { $0.clientExpectsToSend ?? Self.transferSizeUnknown } }
        set { storage.withLock { $0.clientExpectsToSend = newValue >= 0 ? newValue : nil } }
    }

    /// A best guess of the most bytes the task will receive (response headers and body), or
    /// ``transferSizeUnknown`` (the default); used as ``countOfBytesClientExpectsToSend`` is.
    public var countOfBytesClientExpectsToReceive: Int64 {
        get { storage.withLock { $0.clientExpectsToReceive ?? Self.transferSizeUnknown } }
        set { storage.withLock { $0.clientExpectsToReceive = newValue >= 0 ? newValue : nil } }
    }

    /// Where the task is: running, suspended, canceling or completed.
    public var state: State {
        storage.withLock { $0.publicState }
    }

    /// The error the task completed with; nil while running and after a success.
    public var error: (any Error)? {
        storage.withLock { $0.error }
    }

    /// Body bytes received for the final response (plus the resumed offset for a resumed download), counted after
    /// content decoding: a `gzip`, `deflate`, `br` or `zstd` body is decoded, and these are the bytes delivered.
    /// The bytes on the wire are in the task's metrics (`countOfResponseBodyBytesReceived`).
    public var countOfBytesReceived: Int64 {
        storage.withLock { $0.bodyOffset + $0.received }
    }

    /// The expected total of ``countOfBytesReceived``, or ``transferSizeUnknown``: also when the body has a content
    /// coding, whose decoded length is not known in advance (`response.expectedContentLength` is still the
    /// `Content-Length` of the encoded body).
    public var countOfBytesExpectedToReceive: Int64 {
        storage.withLock { $0.expectedToReceive >= 0 ? $0.bodyOffset + $0.expectedToReceive : -1 }
    }

    /// Body bytes sent.
    public var countOfBytesSent: Int64 {
        storage.withLock { $0.sent }
    }

    /// The length of the body to send, or ``transferSizeUnknown``.
    public var countOfBytesExpectedToSend: Int64 {
        storage.withLock { $0.expectedToSend }
    }

    public var description: String {
        let (description, state) = storage.withLock { ($0.taskDescription, $0.publicState) }
        return "\(type(of: self))(\(taskIdentifier)\(description.map { ", \($0)" } ?? ""), \(state))"
    }

    public static func == (lhs: SessionTask, rhs: SessionTask) -> Bool {
        lhs === rhs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    // MARK: Control

    /// Starts the task, or continues it after ``suspend()``. Does nothing once it is completing.
    public func resume() {
        send(.resume)
    }

    /// Pauses a running task: the backend stops moving its bytes until ``resume()``. Timeouts keep running.
    public func suspend() {
        send(.suspend)
    }

    /// Cancels the task; it completes with `CourierError.Code.cancelled` (exactly once, as always).
    public func cancel() {
        send(.cancel)
    }

    /// Backpressure from `bytes(for:)`: pause or resume the transfer without touching the user's suspension.
    func setBackpressure(paused: Bool) {
        send(.backpressure(paused))
    }

    var currentURL: URL? {
        storage.withLock { $0.currentURL }
    }

    // MARK: The machine

    /// Applies `input` to the task's machine under its lock, then carries out the actions with no lock held.
    /// Delegate calls go to `work`.
    func send(_ input: TaskInput, work: inout DelegateWork) {
        var actions = TaskActions()
        let now = Date()
        let (figures, pumping) = storage.withLock { machine in
            machine.apply(input, at: now, into: &actions)
            return (machine.progressFigures, machine.bodySupplierProgress)
        }
        if let figures {
            SessionTask.show(figures)
        }
        if let pumping {
            pumping.supplier.taken(pumping.taken)
        }
        if !actions.isEmpty {
            perform(actions, work: &work)
        }
    }

    /// ``send(_:work:)`` from outside an event batch: the delegate work is queued at once.
    func send(_ input: TaskInput) {
        var work = DelegateWork()
        send(input, work: &work)
        if !work.isEmpty {
            core.dispatcher.enqueue(work)
        }
    }
}
