import Foundation
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every decision of one task, as a pure state machine: it takes ``TaskInput`` values and appends the
/// ``TaskAction`` values the task must carry out, in order. It holds no lock, calls no backend and no delegate,
/// and reads no clock (the time comes with each input), so each transition can be tested without a network.
///
/// A ``SessionTask`` keeps one machine behind one lock, applies an input under it, and performs the actions
/// after releasing it. The rules it encodes are listed in `docs/task-machine.md` and `docs/response-path.md`.
struct TaskMachine: Sendable {
    enum Phase: Sendable, Equatable {
        /// Made, never resumed: only Swift values exist.
        case created
        /// A hop is in flight, or is being prepared or submitted.
        case running
        /// The outcome is decided; waiting for the COMPLETE of retired hops before reporting it.
        case finishing
        /// Reported (or silently ended after `.becomeDownload`).
        case completed

        /// Phases only move forward (a step may be skipped); nothing leaves `completed`.
        func allows(_ next: Phase) -> Bool {
            next.rank > rank || (next == self && self != .completed)
        }

        private var rank: Int {
            switch self {
            case .created: 0
            case .running: 1
            case .finishing: 2
            case .completed: 3
            }
        }
    }

    /// A held response waiting for an answer.
    enum Awaiting: Sendable, Equatable {
        case redirect
        case authentication(AuthenticationOffer.Scheme)
        case disposition
        /// `willBeginDelayedRequest` (a background task's `earliestBeginDate` passed).
        case delayedStart
        /// A server-trust challenge: the hop stopped before its request on a new TLS connection.
        case serverTrust
    }

    /// What the task is and where its body goes; changes only in the successor of a data task that became a
    /// download.
    struct Role: Sendable, Equatable {
        var kind: SessionTask.Kind
        /// Body bytes are kept for a completion handler (``TaskMachine/bodyChunks``) rather than delivered.
        var collectsBody: Bool
        /// The final response is held until a ``SessionDataDelegate`` answers its disposition.
        var asksDisposition: Bool
        /// `waitsForConnectivity`: a hop that finds no network waits for one (``TaskAction/checkConnectivity``).
        var waitsForConnectivity = false
        /// How the task uses the session's URL cache; nil when it uses none (no cache, a background session, a
        /// download). One byte: the role stays within the machine's padding (100,000 queued tasks).
        var cacheMode: HTTPCacheRules.Mode?
    }

    var role: Role
    /// Changed through ``enter(_:)`` only.
    private(set) var phase = Phase.created
    var userSuspended = false
    var backpressurePaused = false
    /// Body bytes handed to a data delegate and not yet through its `didReceive` (``deliveryWindow``).
    var unconsumedBytes = 0
    /// What the backend was last told for the current transfer.
    var enginePaused = false
    var cancelRequested = false

    /// The current hop number; 0 before the first submit.
    var hop = 0
    /// The backend handle of the current hop; 0 until the submit returns or the hop's first event arrives.
    var transfer: UInt64 = 0
    /// Hops abandoned (redirected, retried) whose COMPLETE has not arrived yet.
    var retiredHops: Set<Int> = []
    var hops: [HopRecord] = []
    var awaiting: Awaiting?
    /// `.becomeDownload` moved the transfer to a download task: later events belong to it.
    var handedOver = false

    var originalRequest: TaskRequest?
    var currentRequest: TaskRequest?
    /// The response whose body the task delivers, once it arrived.
    var finalResponse: TaskResponse?

    var received: Int64 = 0
    var expectedToReceive: Int64 = -1
    var sent: Int64 = 0
    var expectedToSend: Int64 = -1
    var reportedReceived: Int64 = 0
    var reportedSent: Int64 = 0

    var bodyChunks: [Data] = []

    var startDate: Date?
    var resourceDeadline: Date?

    var taskDescription: String?
    var priority: Float

    // Downloads.
    var staging: URL?
    /// Where the body of the current response starts in the staging file.
    var bodyOffset: Int64 = 0
    /// The offset requested from the server for the current hop.
    var requestedResumeOffset: Int64 = 0
    var bytesOnDisk: Int64 = 0

    /// Fields few tasks set, out of line (see ``RareTaskState``).
    private var rare = OutOfLineRareState()

    init(role: Role, request: TaskRequest?, priority: Float = SessionTask.defaultPriority) {
        self.role = role
        self.originalRequest = request
        self.currentRequest = request
        self.priority = priority
    }

    /// An outcome decided by the task rather than by the backend (too many redirects, a refused redirect, a
    /// cancelled challenge, a satisfied 416): reported when the current transfer's COMPLETE arrives.
    var forcedOutcome: TaskOutcome? {
        get { rare[\.forcedOutcome] }
        set { rare[\.forcedOutcome] = newValue }
    }
    /// The outcome waiting for retired hops, when the current transfer ended before them.
    var pendingOutcome: TaskOutcome? {
        get { rare[\.pendingOutcome] }
        set { rare[\.pendingOutcome] = newValue }
    }
    /// The error the task completed with, once reported.
    var error: CourierError? {
        get { rare[\.error] }
        set { rare[\.error] = newValue }
    }
    /// The resume data this task was made from.
    var resumeSource: ResumeData? {
        get { rare[\.resumeSource] }
        set { rare[\.resumeSource] = newValue }
    }
    var backendResumed: Bool {
        get { rare[\.backendResumed] }
        set { rare[\.backendResumed] = newValue }
    }
    var redirectCount: Int {
        get { rare[\.redirectCount] ?? 0 }
        set { rare[\.redirectCount] = newValue == 0 ? nil : newValue }
    }
    /// The credential sent with the current hop, if any.
    var authentication: TransferSpec.Authentication {
        get { rare[\.authentication] ?? .none }
        set { rare[\.authentication] = newValue == .none ? nil : newValue }
    }
    var failedAuthentications: Int {
        get { rare[\.failedAuthentications] ?? 0 }
        set { rare[\.failedAuthentications] = newValue == 0 ? nil : newValue }
    }

    /// `earliestBeginDate`: a background task's backend begins no sooner, then asks (``TaskQuestion/delayedStart``).
    var earliestBeginDate: Date? {
        get { rare[\.earliestBeginDate] }
        set { rare[\.earliestBeginDate] = newValue }
    }
    /// The proxy's credential, once a 407 was answered.
    var proxyAuthentication: TransferSpec.Authentication {
        get { rare[\.proxyAuthentication] ?? .none }
        set { rare[\.proxyAuthentication] = newValue == .none ? nil : newValue }
    }
    /// The failure of the hop that found no network, while the task looks for one.
    var connectivityFailure: CourierError? {
        get { rare[\.connectivityFailure] }
        set { rare[\.connectivityFailure] = newValue }
    }
    var toldWaitingForConnectivity: Bool {
        get { rare[\.toldWaitingForConnectivity] ?? false }
        set { rare[\.toldWaitingForConnectivity] = newValue ? true : nil }
    }
    var clientExpectsToSend: Int64? {
        get { rare[\.clientExpectsToSend] }
        set { rare[\.clientExpectsToSend] = newValue }
    }
    var clientExpectsToReceive: Int64? {
        get { rare[\.clientExpectsToReceive] }
        set { rare[\.clientExpectsToReceive] = newValue }
    }
    /// The largest body the URL cache takes (5 % of its capacity, as Apple's URLCache); out of line, set only for
    /// tasks that use a cache.
    var cacheEntryLimit: Int {
        get { rare[\.cacheEntryLimit] ?? 0 }
        set { rare[\.cacheEntryLimit] = newValue }
    }
    /// The current hop's conditions (``RareTaskState/hopConditions``).
    var hopConditions: [String: String] {
        get { rare[\.hopConditions] ?? [:] }
        set { rare[\.hopConditions] = newValue.isEmpty ? nil : newValue }
    }
    /// The stored response a hop revalidates (its request carries the entry's validators).
    var revalidating: CacheEntry? {
        get { rare[\.revalidating] }
        set { rare[\.revalidating] = newValue }
    }
    /// The stored response the task delivers (served from the cache, or revalidated by a 304): its body goes out
    /// before the end.
    var servedEntry: CacheEntry? {
        get { rare[\.servedEntry] }
        set { rare[\.servedEntry] = newValue }
    }
    /// The response being received, stored when its body is complete.
    var cacheCandidate: CacheCandidate? {
        get { rare[\.cacheCandidate] }
        set { rare[\.cacheCandidate] = newValue }
    }
    /// ``SessionTask/maximumBytesPerSecond``.
    var maximumBytesPerSecond: Int64? {
        get { rare[\.maximumBytesPerSecond] }
        set { rare[\.maximumBytesPerSecond] = newValue }
    }
    /// A resumable upload's resource and where resuming stands, once the server offered it (104).
    var uploadResumption: UploadResumption? {
        get { rare[\.uploadResumption] }
        set { rare[\.uploadResumption] = newValue }
    }
    /// The task's span (``SessionTelemetry``), kept here for the shell.
    var span: (any Span)? {
        get { rare[\.span] }
        set { rare[\.span] = newValue }
    }
    /// ``SessionTask/delegate`` (kept here for the shell).
    var ownDelegate: (any SessionTaskDelegate)? {
        get { rare[\.ownDelegate] }
        set { rare[\.ownDelegate] = newValue }
    }
    /// ``SessionTask/progress``, once someone asked for it (kept here for the shell).
    var progress: Progress? {
        get { rare[\.progress] }
        set { rare[\.progress] = newValue }
    }
    /// What supplies the current hop's streamed body (kept here for the shell).
    var bodySupplier: (any BodySupplier)? {
        get { rare[\.bodySupplier] }
        set { rare[\.bodySupplier] = newValue }
    }
    /// ``DownloadTask/maximumSegments``.
    var maximumSegments: Int? {
        get { rare[\.maximumSegments] }
        set { rare[\.maximumSegments] = newValue }
    }
    /// The segments of a segmented download as its backend last reported them.
    var segmentMap: [DownloadSegment]? {
        get { rare[\.segmentMap] }
        set { rare[\.segmentMap] = newValue }
    }
    /// ``DownloadTask/expectedChecksum``.
    var expectedChecksum: Checksum? {
        get { rare[\.expectedChecksum] }
        set { rare[\.expectedChecksum] = newValue }
    }
    /// The digest the backend computed of the downloaded file (its last transfer's).
    var fileDigest: Checksum? {
        get { rare[\.fileDigest] }
        set { rare[\.fileDigest] = newValue }
    }
    /// ``DownloadTask/fileDigestAlgorithm``.
    var fileDigestAlgorithm: Checksum.Algorithm? {
        get { rare[\.fileDigestAlgorithm] }
        set { rare[\.fileDigestAlgorithm] = newValue }
    }
    var resumeSourceError: CourierError? {
        get { rare[\.resumeSourceError] }
        set { rare[\.resumeSourceError] = newValue }
    }
    var resumeDataHandler: (@Sendable (Data?) -> Void)? {
        get { rare[\.resumeDataHandler] }
        set { rare[\.resumeDataHandler] = newValue }
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

    /// The URL of the hop in flight (or of the request, before the first hop): `currentRequest` is the last hop's.
    var currentURL: URL? {
        currentRequest?.url
    }

    // MARK: Applying inputs

    /// Applies one input at time `now`; appends what the task must do to `actions`.
    mutating func apply(_ input: TaskInput, at now: Date, into actions: inout TaskActions) {
        switch input {
        case .resume:
            resume(at: now, into: &actions)
        case .suspend:
            suspend(into: &actions)
        case .cancel:
            cancel(into: &actions)
        case .backpressure(let paused):
            setBackpressure(paused, into: &actions)
        case .consumed(let count):
            unconsumedBytes -= count
            if backpressurePaused, unconsumedBytes <= Self.deliveryWindow / 2 {
                setBackpressure(false, into: &actions)
            }
        case .started(let resumeOffset, let staging, let deadline):
            guard phase == .running, hop == 0 else {
                return
            }
            self.staging = staging
            resourceDeadline = deadline
            beginFirstHop(resumeOffset: resumeOffset, at: now, into: &actions)
        case .cacheLookedUp(let entry):
            cacheLookedUp(entry, at: now, into: &actions)
        case .failed(let error):
            complete(.failure(error), into: &actions)
        case .submitted(let hop, let transfer):
            adopt(transfer: transfer, hop: hop, into: &actions)
        case .submitFailed(let hop, let error):
            guard hop == self.hop, phase == .running else {
                return
            }
            transfer = 0
            complete(.failure(error), into: &actions)
        case .event(let hop, let event):
            handle(event, hop: hop, at: now, into: &actions)
        case .redirectAnswered(let hop, let request):
            redirectAnswered(request, hop: hop, at: now, into: &actions)
        case .challengeAnswered(let hop, let answer):
            challengeAnswered(answer, hop: hop, at: now, into: &actions)
        case .serverTrustAnswered(let hop, let answer):
            serverTrustAnswered(answer, hop: hop, at: now, into: &actions)
        case .dispositionAnswered(let hop, let answer):
            dispositionAnswered(answer, hop: hop, into: &actions)
        case .delayedStartAnswered(let hop, let answer):
            delayedStartAnswered(answer, hop: hop, into: &actions)
        case .connectivity(let hop, let finding):
            connectivity(finding, hop: hop, at: now, into: &actions)
        case .heldFailed(let hop, let error):
            guard hop == self.hop, phase == .running else {
                return
            }
            failHeld(error, into: &actions)
        case .upgradeEnded(let hop, let outcome, let cancelTransfer):
            guard hop == self.hop, phase == .running else {
                return
            }
            if forcedOutcome == nil {
                forcedOutcome = outcome
            }
            if cancelTransfer, transfer != 0 {
                actions.append(.cancelTransfer(transfer))
            }
        case .abandon:
            cancelRequested = true
            retiredHops = []
            let error = CourierError(.cancelled, "the session was released", failingURL: currentURL)
            finish(.failure(error), into: &actions)
        }
    }

    /// Applies one input and returns the actions as an array (tests and one-off callers).
    mutating func apply(_ input: TaskInput, at now: Date) -> [TaskAction] {
        var actions = TaskActions()
        apply(input, at: now, into: &actions)
        return actions.elements
    }

    // MARK: Lifecycle

    private mutating func resume(at now: Date, into actions: inout TaskActions) {
        switch phase {
        case .created:
            enter(.running)
            startDate = now
            actions.append(.start)
        case .running:
            guard userSuspended else {
                return
            }
            userSuspended = false
            syncBackendPause(into: &actions)
        case .finishing, .completed:
            break
        }
    }

    private mutating func suspend(into actions: inout TaskActions) {
        guard phase == .running, !userSuspended else {
            return
        }
        userSuspended = true
        syncBackendPause(into: &actions)
    }

    /// How many body bytes a data delegate may have waiting on its queue: past it the transfer pauses (the engine
    /// stops reading the socket, and the server's sending stops within the kernel's buffers); it resumes once the
    /// delegate is down to half. A delegate slower than the network bounds the memory its task holds to this.
    static let deliveryWindow = 4 << 20

    /// `count` bytes of the body are on their way to the data delegate, which says ``TaskInput/consumed(_:)`` after
    /// each `didReceive`; tasks whose body goes elsewhere (collected, a stream with its own bound, a file) are not
    /// paced here.
    mutating func paceDelivery(of count: Int, into actions: inout TaskActions) {
        guard role.asksDisposition else {
            return
        }
        unconsumedBytes += count
        if unconsumedBytes >= Self.deliveryWindow {
            setBackpressure(true, into: &actions)
        }
    }

    private mutating func setBackpressure(_ paused: Bool, into actions: inout TaskActions) {
        guard phase == .running, backpressurePaused != paused else {
            return
        }
        backpressurePaused = paused
        syncBackendPause(into: &actions)
    }

    /// Tells the backend to pause or resume the current transfer when that differs from what it was last told.
    private mutating func syncBackendPause(into actions: inout TaskActions) {
        guard transfer != 0, !cancelRequested else {
            return
        }
        if wantsEnginePaused && !enginePaused {
            enginePaused = true
            actions.append(.pauseTransfer(transfer))
        } else if !wantsEnginePaused && enginePaused {
            enginePaused = false
            actions.append(.resumeTransfer(transfer))
        }
    }

    mutating func cancel(into actions: inout TaskActions) {
        switch phase {
        case .created:
            cancelRequested = true
            finish(.failure(CourierError(.cancelled, "cancelled", failingURL: currentURL)), into: &actions)
        case .running:
            guard !cancelRequested else {
                return
            }
            cancelRequested = true
            awaiting = nil
            if transfer != 0 {
                actions.append(cancelAction(transfer))
            } else if connectivityFailure != nil {
                // Waiting for a network: no transfer to end.
                connectivityFailure = nil
                complete(.failure(CourierError(.cancelled, "cancelled", failingURL: currentURL)), into: &actions)
            }
        case .finishing, .completed:
            break
        }
    }

    /// The cancel of the task's transfer: one that produces resume data when the task was asked for it.
    private func cancelAction(_ transfer: UInt64) -> TaskAction {
        role.kind == .download && resumeDataHandler != nil
            ? .cancelTransferProducingResumeData(transfer) : .cancelTransfer(transfer)
    }

    /// Learns the backend handle of hop `hop` (from the submit's answer or from the hop's first event).
    mutating func adopt(transfer id: UInt64, hop number: Int, into actions: inout TaskActions) {
        guard number == hop, transfer == 0, phase == .running, !retiredHops.contains(number) else {
            return
        }
        transfer = id
        if cancelRequested {
            actions.append(cancelAction(id))
        } else if wantsEnginePaused {
            enginePaused = true
            actions.append(.pauseTransfer(id))
        }
    }

    // MARK: Hops

    /// Starts the next hop for `request`, unless the task was cancelled or ran out of time.
    mutating func submitHop(
        _ request: TaskRequest?,
        resumeOffset: Int64,
        authentication: TransferSpec.Authentication,
        conditions: [String: String] = [:],
        again: Bool = false,
        at now: Date,
        into actions: inout TaskActions
    ) {
        guard let request else {
            complete(.failure(CourierError(.badURL, "the request has no URL")), into: &actions)
            return
        }
        guard !cancelRequested else {
            complete(.failure(CourierError(.cancelled, "cancelled", failingURL: request.url)), into: &actions)
            return
        }
        if let resourceDeadline, now >= resourceDeadline {
            complete(
                .failure(CourierError(.timedOut, "the resource timeout expired", failingURL: request.url)),
                into: &actions
            )
            return
        }
        self.authentication = authentication
        requestedResumeOffset = resumeOffset
        bodyOffset = resumeOffset
        received = 0
        expectedToReceive = -1
        reportedReceived = 0
        sent = 0
        reportedSent = 0
        finalResponse = nil
        transfer = 0
        enginePaused = false
        awaiting = nil
        currentRequest = request
        hopConditions = conditions
        if again, hop >= 1, hop <= hops.count {
            // The same hop once more (its transfer ended before its request): state keyed by hop number holds.
            hops[hop - 1] = HopRecord(request: request, start: now)
        } else {
            hop += 1
            hops.append(HopRecord(request: request, start: now))
        }
        actions.append(
            .submit(
                HopPlan(
                    hop: hop,
                    request: request,
                    resumeOffset: resumeOffset,
                    authentication: authentication,
                    proxyAuthentication: proxyAuthentication,
                    priority: priority,
                    resourceDeadline: resourceDeadline,
                    staging: staging,
                    resume: resumeOffset > 0 || resumeSource?.segments != nil ? resumeSource : nil,
                    bodyOffset: uploadResumption?.sendOffset ?? 0,
                    maximumBytesPerSecond: maximumBytesPerSecond,
                    conditions: conditions,
                    holdsResponse: role.asksDisposition,
                    collectsBody: role.collectsBody,
                    hasOwnDelegate: ownDelegate != nil
                )
            )
        )
    }

    /// Abandons the current hop (a followed redirect, an authentication retry): from now on its events are stale,
    /// and its COMPLETE is awaited before the task may report its end. Its transfer is cancelled.
    mutating func retireCurrentHop(into actions: inout TaskActions) {
        if hop > 0 {
            retiredHops.insert(hop)
        }
        awaiting = nil
        if transfer != 0 {
            actions.append(.cancelTransfer(transfer))
        }
        transfer = 0
    }

    /// The answer still awaited for hop `number`; nil when an answer for it would come too late (another hop, a
    /// cancel, the end) or when nothing is awaited.
    func awaitedAnswer(hop number: Int) -> Awaiting? {
        guard number == hop, phase == .running, !cancelRequested else {
            return nil
        }
        return awaiting
    }

    /// Ends a task whose held response cannot go on: the backend cancels the transfer and its COMPLETE reports
    /// `error`.
    mutating func failHeld(_ error: CourierError, into actions: inout TaskActions) {
        forcedOutcome = .failure(error)
        awaiting = nil
        if transfer != 0 {
            actions.append(.cancelTransfer(transfer))
        }
    }
}

extension TaskMachine {
    /// Moves to `next`: an impossible change (``Phase/allows(_:)``) stops a debug build, as the C engine's
    /// `set_state` does.
    mutating func enter(_ next: Phase) {
        assert(phase.allows(next), "task phase \(phase) → \(next)")
        phase = next
    }

    /// The copy that continues a data task as a download after `.becomeDownload` runs from the start.
    mutating func startRunningAsSuccessor() {
        phase = .running
    }
}
