import Foundation

/// Something that happened to a task: a call of the user's, a backend event, an answer from a delegate, or the
/// result of an action the task carried out. ``TaskMachine/apply(_:at:into:)`` takes one at a time.
///
/// Answers and results name the hop they belong to; one that arrives for an earlier hop, or after the task
/// stopped waiting for it, is ignored.
enum TaskInput: Codable, Sendable, Equatable {
    /// `resume()`.
    case resume
    /// `suspend()`.
    case suspend
    /// `cancel()`, `cancel(byProducingResumeData:)`, `invalidateAndCancel()`.
    case cancel
    /// A bounded consumer (`bytes(for:)`) is full (`true`) or has room again.
    case backpressure(Bool)
    /// The data delegate returned from `didReceive` for this many bytes of the body (``TaskMachine/deliveryWindow``).
    case consumed(Int)
    /// The answer to ``TaskAction/start``: the task is registered and its files are ready; submit the first hop.
    /// `resumeOffset` is the length of the partial file a resumed download continues.
    case started(resumeOffset: Int64, staging: URL?, resourceDeadline: Date?)
    /// The answer to ``TaskAction/start`` when the task cannot start (an invalid request, a missing upload file,
    /// an invalidated session, unusable resume data).
    case failed(CourierError)
    /// The answer to ``TaskAction/lookUpCache(_:)``: the stored response, or nil.
    case cacheLookedUp(CacheEntry?)
    /// The backend accepted the hop's transfer.
    case submitted(hop: Int, transfer: UInt64)
    /// The backend refused the hop's transfer.
    case submitFailed(hop: Int, CourierError)
    /// An event of one of the task's transfers.
    case event(hop: Int, TransferEvent)
    /// The delegate's answer to ``TaskQuestion/redirect(hop:response:proposed:)``: the request to follow, or nil to
    /// deliver the 3xx as the final response.
    case redirectAnswered(hop: Int, TaskRequest?)
    /// The answer to ``TaskQuestion/challenge(hop:_:)``.
    case challengeAnswered(hop: Int, ChallengeAnswer)
    /// The answer to ``TaskQuestion/serverTrust(hop:_:)``.
    case serverTrustAnswered(hop: Int, ServerTrustAnswer)
    /// The answer to ``TaskQuestion/disposition(hop:response:)``.
    case dispositionAnswered(hop: Int, DispositionAnswer)
    /// The answer to ``TaskQuestion/delayedStart(hop:request:)``.
    case delayedStartAnswered(hop: Int, DelayedStartAnswer)
    /// What ``TaskAction/checkConnectivity(hop:url:)`` found, then (when it was missing) that it came back.
    case connectivity(hop: Int, ConnectivityFinding)
    /// Something the task needed to answer a held response failed (the staging file of `.becomeDownload`).
    case heldFailed(hop: Int, CourierError)
    /// The protocol that hop `hop` upgraded to (a WebSocket) decided how the task ends; its transfer is cancelled now
    /// (`cancelTransfer`) or left to end (the server closes the connection, or a later input cancels it). The first
    /// outcome decided stays.
    case upgradeEnded(hop: Int, TaskOutcome, cancelTransfer: Bool)
    /// The session was released without being invalidated: end as cancelled, asking no one.
    case abandon
}

/// How a challenge was answered, once a delegate's disposition and the credential storage were consulted.
enum ChallengeAnswer: Codable, Sendable, Equatable {
    /// Retry the hop with this credential.
    case credential(user: String, password: String)
    /// No credential: the 401 or 407 becomes the final response.
    case withoutCredential
    /// `.cancelAuthenticationChallenge`: the task ends cancelled.
    case cancel
}

/// How a server-trust challenge was answered. The shell keeps the session's decision about the server (which the
/// next hop's connection options carry); the task only learns whether to go on.
enum ServerTrustAnswer: Codable, Sendable, Equatable {
    /// The server is admitted: the hop again, on a connection of the decided server.
    case proceed
    /// Refused (`.performDefaultHandling` of a server that did not verify): the task fails with this error.
    case refuse(CourierError)
    /// `.cancelAuthenticationChallenge`: the task ends cancelled.
    case cancel
}

/// The network as the task's shell found it after a hop failed for lack of one.
enum ConnectivityFinding: Codable, Sendable, Equatable {
    /// A route is there: the failure was not the network's absence (or it came back at once).
    case available
    /// No route: the task waits (its delegate is told once).
    case missing
    /// A route came back, or the resource deadline passed while waiting.
    case returned
}

/// How `willBeginDelayedRequest` was answered.
enum DelayedStartAnswer: Codable, Sendable, Equatable {
    /// `.continueLoading`.
    case begin
    /// `.useNewRequest`: begin with this request.
    case beginWith(TaskRequest)
    /// `.cancel`: the task ends cancelled.
    case cancel
}

/// How a held final response of a data task was answered.
enum DispositionAnswer: Codable, Sendable, Equatable {
    case allow
    case cancel
    /// The rest of the body goes to the staging file at `staging`, for a new download task.
    case becomeDownload(staging: URL)
}
