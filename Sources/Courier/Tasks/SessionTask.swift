import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A transfer made by a ``Session``: the common base of ``DataTask``, ``UploadTask`` and ``DownloadTask``.
///
/// Tasks start ``State-swift.enum/suspended``; ``resume()`` submits them. A task that was never resumed holds
/// only Swift values. All members are thread-safe.
///
/// `@unchecked Sendable`: every mutable property lives in `TaskState` behind the `storage` mutex; the other stored
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
    /// The key of the task in the session registry (the high bits of engine tags).
    let registryKey: Int
    let sink: TaskSink
    let uploadBody: UploadBody?
    let storage: LockedValue<TaskState>

    init(
        core: SessionCore,
        kind: Kind,
        identifier: Int,
        registryKey: Int? = nil,
        request: URLRequest?,
        sink: TaskSink,
        uploadBody: UploadBody? = nil,
        state initial: TaskState? = nil
    ) {
        self.core = core
        self.kind = kind
        self.taskIdentifier = identifier
        self.registryKey = registryKey ?? identifier
        self.sink = sink
        self.uploadBody = uploadBody
        var initialState = initial ?? TaskState(request: request, priority: SessionTask.defaultPriority)
        if initial == nil, let uploadBody {
            initialState.expectedToSend = uploadBody.length
        } else if initial == nil, let length = request?.httpBody?.count, length > 0 {
            initialState.expectedToSend = Int64(length)
        }
        self.storage = LockedValue(initialState)
    }

    // MARK: Public properties

    /// The request the task was created with.
    public var originalRequest: URLRequest? {
        storage.withLock { $0.originalRequest }
    }

    /// The request of the current hop (after redirects).
    public var currentRequest: URLRequest? {
        storage.withLock { $0.currentRequest }
    }

    /// The final response, once it arrived.
    public var response: URLResponse? {
        storage.withLock { $0.response }
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
        let action = storage.withLock { $0.resume() }
        switch action {
        case .none:
            break
        case .start:
            start()
        case .resumeTransfer(let transfer):
            core.runningEngine?.resume(transfer)
        }
    }

    /// Pauses a running task: the engine stops moving its bytes until ``resume()``. Timeouts keep running.
    public func suspend() {
        let action = storage.withLock { $0.suspend() }
        perform(action)
    }

    /// Cancels the task; it completes with `CourierError.Code.cancelled` (exactly once, as always).
    public func cancel() {
        let action = storage.withLock { $0.cancel() }
        switch action {
        case .none:
            break
        case .cancelTransfer(let transfer):
            core.runningEngine?.cancel(transfer)
        case .completeNow:
            var work = DelegateWork()
            finalize(.failure(CourierError(.cancelled, "cancelled", failingURL: currentURL)), work: &work)
            core.dispatcher.enqueue(work)
        }
    }

    func perform(_ action: TaskState.PauseAction) {
        switch action {
        case .none:
            break
        case .pause(let transfer):
            core.runningEngine?.pause(transfer)
        case .resume(let transfer):
            core.runningEngine?.resume(transfer)
        }
    }

    /// Backpressure from `bytes(for:)`: pause or resume the transfer without touching the user's suspension.
    func setBackpressure(paused: Bool) {
        let action = storage.withLock { $0.setBackpressure(paused) }
        perform(action)
    }

    var currentURL: URL? {
        storage.withLock { $0.currentRequest?.url }
    }
}

/// The body of an upload task.
enum UploadBody: Sendable {
    case data(Data)
    case file(URL)

    var length: Int64 {
        switch self {
        case .data(let data):
            return Int64(data.count)
        case .file(let url):
            let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)??.int64Value
            return size ?? -1
        }
    }
}
