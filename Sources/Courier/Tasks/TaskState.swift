import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange a task made (a redirect hop, an authentication retry, or the final exchange).
struct HopRecord: Sendable {
    var request: URLRequest
    var start: Date
    var response: HTTPURLResponse?
    /// curl's timings, once the hop's COMPLETE arrived. Held out of line: a hop waiting for a slot stays small.
    var metrics: EngineMetrics? {
        get { timings?.metrics }
        set { timings = newValue.map(Timings.init) }
    }
    private var timings: Timings?

    private final class Timings: Sendable {
        let metrics: EngineMetrics
        init(_ metrics: EngineMetrics) {
            self.metrics = metrics
        }
    }

    init(request: URLRequest, start: Date) {
        self.request = request
        self.start = start
    }
}

/// A held response waiting for an answer from the delegate (or from Courier's defaults).
enum HeldDecision: Sendable, Equatable {
    case redirect
    case authentication
    case disposition
}

/// The mutable state of one task, guarded by the task's mutex.
///
/// The lifecycle transitions are pure: each takes the state and an input and returns the engine action to
/// perform after the lock is released. Nothing here calls the engine or a delegate.
struct TaskState: Sendable {
    enum Phase: Sendable, Equatable {
        /// Made, never resumed: only Swift values exist.
        case created
        /// A hop is in flight (or about to be submitted).
        case running
        /// The outcome is decided; waiting for the COMPLETE of retired hops before reporting it.
        case finishing
        /// Reported (or silently ended after `.becomeDownload`).
        case completed
    }

    var phase = Phase.created
    var userSuspended = false
    var backpressurePaused = false
    /// What the engine was last told for the current transfer.
    var enginePaused = false
    var cancelRequested = false

    /// The current hop number (the low bits of the engine tag); 0 before the first submit.
    var hop = 0
    /// The engine id of the current hop; 0 until the submit returns or the first event of the hop arrives.
    var transfer: UInt64 = 0
    /// Hops abandoned (redirected, retried) whose COMPLETE has not arrived yet.
    var retiredHops: Set<Int> = []
    var hops: [HopRecord] = []
    var awaiting: HeldDecision?

    var originalRequest: URLRequest?
    var currentRequest: URLRequest?
    var response: HTTPURLResponse?
    var head: ResponseHead?

    var received: Int64 = 0
    var expectedToReceive: Int64 = -1
    var sent: Int64 = 0
    var expectedToSend: Int64 = -1
    var reportedReceived: Int64 = 0
    var reportedSent: Int64 = 0

    var redirectCount = 0
    /// The credential sent with the current hop, if any.
    var authentication: TransferSpec.Authentication = .none
    var failedAuthentications = 0

    var bodyChunks: [Data] = []

    var startDate: Date?
    var resourceDeadline: Date?

    /// Fields few tasks set, out of line (see ``RareTaskState``).
    private var rare = OutOfLineRareState()

    /// An outcome decided by Courier rather than by the engine (too many redirects, a refused redirect, a
    /// cancelled challenge, a satisfied 416): reported when the current transfer's COMPLETE arrives.
    var forcedOutcome: Result<Void, CourierError>? {
        get { rare[\.forcedOutcome] }
        set { rare[\.forcedOutcome] = newValue }
    }
    /// The outcome waiting for retired hops, when the current transfer ended before them.
    var pendingOutcome: Result<Void, CourierError>? {
        get { rare[\.pendingOutcome] }
        set { rare[\.pendingOutcome] = newValue }
    }
    var error: CourierError? {
        get { rare[\.error] }
        set { rare[\.error] = newValue }
    }

    var taskDescription: String?
    var priority: Float

    // Downloads.
    var stagingURL: URL?
    /// Where the body of the current response starts in the staging file.
    var bodyOffset: Int64 = 0
    /// The resume data this task was made from.
    var resumeSource: ResumeData? {
        get { rare[\.resumeSource] }
        set { rare[\.resumeSource] = newValue }
    }
    var resumeSourceError: CourierError? {
        get { rare[\.resumeSourceError] }
        set { rare[\.resumeSourceError] = newValue }
    }
    /// The offset requested from the server for the current hop.
    var requestedResumeOffset: Int64 = 0
    var bytesOnDisk: Int64 = 0
    var resumeDataHandler: (@Sendable (Data?) -> Void)? {
        get { rare[\.resumeDataHandler] }
        set { rare[\.resumeDataHandler] = newValue }
    }

    init(request: URLRequest?, priority: Float) {
        self.originalRequest = request
        self.currentRequest = request
        self.priority = priority
    }

    var wantsEnginePaused: Bool {
        userSuspended || backpressurePaused
    }

    var publicState: SessionTask.State {
        switch phase {
        case .created:
            return .suspended
        case .running:
            if cancelRequested {
                return .canceling
            }
            return userSuspended ? .suspended : .running
        case .finishing:
            return cancelRequested ? .canceling : .running
        case .completed:
            return .completed
        }
    }

    // MARK: Lifecycle transitions

    enum ResumeAction: Equatable {
        case none
        case start
        case resumeTransfer(UInt64)
    }

    mutating func resume() -> ResumeAction {
        switch phase {
        case .created:
            phase = .running
            return .start
        case .running:
            guard userSuspended else {
                return .none
            }
            userSuspended = false
            return syncEnginePause()
        case .finishing, .completed:
            return .none
        }
    }

    enum PauseAction: Equatable {
        case none
        case pause(UInt64)
        case resume(UInt64)
    }

    mutating func suspend() -> PauseAction {
        guard phase == .running, !userSuspended else {
            return .none
        }
        userSuspended = true
        return pauseAction()
    }

    mutating func setBackpressure(_ paused: Bool) -> PauseAction {
        guard phase == .running, backpressurePaused != paused else {
            return .none
        }
        backpressurePaused = paused
        return pauseAction()
    }

    private mutating func pauseAction() -> PauseAction {
        guard transfer != 0, !cancelRequested else {
            return .none
        }
        if wantsEnginePaused && !enginePaused {
            enginePaused = true
            return .pause(transfer)
        }
        if !wantsEnginePaused && enginePaused {
            enginePaused = false
            return .resume(transfer)
        }
        return .none
    }

    private mutating func syncEnginePause() -> ResumeAction {
        if case .resume(let transfer) = pauseAction() {
            return .resumeTransfer(transfer)
        }
        return .none
    }

    enum CancelAction: Equatable {
        case none
        /// Never started: report the cancellation now.
        case completeNow
        case cancelTransfer(UInt64)
    }

    mutating func cancel() -> CancelAction {
        switch phase {
        case .created:
            phase = .finishing
            cancelRequested = true
            return .completeNow
        case .running:
            guard !cancelRequested else {
                return .none
            }
            cancelRequested = true
            return transfer != 0 ? .cancelTransfer(transfer) : .none
        case .finishing, .completed:
            return .none
        }
    }

    /// Abandons the current hop (a followed redirect, an authentication retry) before its transfer is cancelled:
    /// from now on its events are stale, and its COMPLETE is awaited before the task may report its end.
    /// Returns the transfer to cancel.
    mutating func retireCurrentHop() -> UInt64 {
        if hop > 0 {
            retiredHops.insert(hop)
        }
        awaiting = nil
        let retired = transfer
        transfer = 0
        return retired
    }

    /// Starts hop number `hop + 1` for `request`; returns its number.
    mutating func beginHop(_ request: URLRequest, at date: Date) -> Int {
        hop += 1
        transfer = 0
        enginePaused = false
        awaiting = nil
        currentRequest = request
        hops.append(HopRecord(request: request, start: date))
        return hop
    }

    enum AdoptAction: Equatable {
        case none
        case cancel(UInt64)
        case pause(UInt64)
    }

    /// Learns the engine id of hop `hop` (from the submit's return or from the hop's first event).
    mutating func adopt(transfer id: UInt64, hop number: Int) -> AdoptAction {
        guard number == hop, transfer == 0, phase == .running else {
            return .none
        }
        transfer = id
        if cancelRequested {
            return .cancel(id)
        }
        if wantsEnginePaused {
            enginePaused = true
            return .pause(id)
        }
        return .none
    }
}
