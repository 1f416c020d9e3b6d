import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a task must do after an input, in order: talk to the backend, ask or tell its delegate, end.
enum TaskAction: Codable, Sendable, Equatable {
    /// The first `resume()`: register the task and prepare its files, then answer with ``TaskInput/started`` or
    /// ``TaskInput/failed(_:)``.
    case start
    /// Submit a hop; answer with ``TaskInput/submitted(hop:transfer:)`` or ``TaskInput/submitFailed(hop:_:)``.
    case submit(HopPlan)
    case cancelTransfer(UInt64)
    /// `cancel(byProducingResumeData:)` of a download: a backend that keeps the partial file itself (courierd) names
    /// it in the resume data of the COMPLETE.
    case cancelTransferProducingResumeData(UInt64)
    case pauseTransfer(UInt64)
    case resumeTransfer(UInt64)
    /// Answer a held response.
    case decide(UInt64, TransferDecision)
    /// The response sets what the session keeps: cookies (if the configuration keeps them), HSTS.
    case rememberResponse(TaskResponse)
    /// Look for a stored response to the request in the session's URL cache; answer with
    /// ``TaskInput/cacheLookedUp(_:)``.
    case lookUpCache(TaskRequest)
    /// Store (or refresh) a response and its body in the session's URL cache.
    case storeInCache(CacheEntry)
    /// An unsafe request succeeded: remove what the cache holds for its URL.
    case invalidateCache(URL)
    /// Ask the delegate (or Courier's default) and feed the answer back.
    case ask(TaskQuestion)
    /// Tell the delegate, the completion handler or the stream.
    case deliver(TaskDelivery)
    /// `.becomeDownload`: the task ended silently; a download task continues `transfer` into `staging`.
    case becomeDownload(transfer: UInt64, staging: URL)
    /// An event that reached a data task after `.becomeDownload`: hand it to the download task that took over.
    case forward(hop: Int, TransferEvent)
    /// Report the end (exactly once): files, resume data, metrics, then the completion.
    case finish(TaskOutcome)
    /// Hop `hop` found no network (`waitsForConnectivity`): look for a route to `url` and answer with
    /// ``TaskInput/connectivity(hop:_:)``: `.available` at once, or `.missing`, then `.returned` when one comes back
    /// (or at the resource deadline, `deadline`).
    case checkConnectivity(hop: Int, url: URL?, deadline: Date?)
}

/// One hop to submit: the request and what the task decided about it.
struct HopPlan: Codable, Sendable, Equatable {
    var hop: Int
    var request: TaskRequest
    /// Bytes of the partial file the hop continues (`Range`), 0 for a whole body.
    var resumeOffset: Int64
    var authentication: TransferSpec.Authentication
    /// The credential for the proxy, once a 407 was answered (it goes with every later hop).
    var proxyAuthentication: TransferSpec.Authentication = .none
    var priority: Float
    var resourceDeadline: Date?
    /// The staging file of a download.
    var staging: URL?
    /// The resume data a resumed hop continues (its headers and validator go on the request).
    var resume: ResumeData?
    /// Where the body this hop sends starts (a resumed upload's append); 0: the whole body.
    var bodyOffset: Int64 = 0
    /// ``SessionTask/maximumBytesPerSecond``, when set.
    var maximumBytesPerSecond: Int64?
    /// The conditional fields of a revalidation of a stored response (`If-None-Match`, `If-Modified-Since`).
    var conditions: [String: String] = [:]
    /// The final response waits for a data delegate's disposition (``TaskMachine/Role/asksDisposition``).
    var holdsResponse = false
    /// The body is kept in memory for one delivery (``TaskMachine/Role/collectsBody``).
    var collectsBody = false
    /// The task has a delegate of its own (``SessionTask/delegate``).
    var hasOwnDelegate = false
}

/// A response and the URL it answered.
///
/// A class, so that a response costs one allocation however many actions, hops and deliveries carry it, and
/// holds the `HTTPURLResponse` built for it the first time someone asks.
final class TaskResponse: Codable, Sendable, Equatable {
    let url: URL
    let head: ResponseHead
    /// Holds the `HTTPURLResponse` once someone asked for it. Not part of the encoding or of equality; a decoded
    /// response builds its own.
    private let built = AtomicLazyReference<HTTPURLResponse>()

    /// The `HTTPURLResponse`, built the first time someone asks (the delegate, the completion handler,
    /// `task.response`, the metrics) and shared by all of them: when two threads ask at once, both may build one
    /// and the first stored is the one both get. The swift-http-types API never asks, and never pays for it.
    var httpResponse: HTTPURLResponse? {
        if let existing = built.load() {
            return existing
        }
        return head.response(for: url).map { built.storeIfNil($0) }
    }

    init(url: URL, head: ResponseHead) {
        self.url = url
        self.head = head
    }

    private enum CodingKeys: String, CodingKey {
        case url, head
    }

    convenience init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            url: try container.decode(URL.self, forKey: .url),
            head: try container.decode(ResponseHead.self, forKey: .head)
        )
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(head, forKey: .head)
    }

    static func == (lhs: TaskResponse, rhs: TaskResponse) -> Bool {
        lhs.url == rhs.url && lhs.head == rhs.head
    }
}

/// A question only the delegate can answer (Courier answers by default when there is no delegate to ask).
enum TaskQuestion: Codable, Sendable, Equatable {
    /// `willPerformHTTPRedirection`: follow `proposed`, another request, or none.
    case redirect(hop: Int, response: TaskResponse, proposed: TaskRequest)
    /// `didReceive challenge`.
    case challenge(hop: Int, TaskChallenge)
    /// `didReceive challenge` with a server-trust protection space: the hop's new TLS connection stopped before its
    /// request; `url` is the hop's.
    case serverTrust(hop: Int, url: URL, PeerTrustReport)
    /// `didReceive response`: allow, cancel or become a download.
    case disposition(hop: Int, response: TaskResponse)
    /// `willBeginDelayedRequest`: the background task's `earliestBeginDate` passed; begin with `request`, another,
    /// or cancel.
    case delayedStart(hop: Int, request: TaskRequest)
}

/// An authentication challenge Courier can answer (Basic or Digest).
struct TaskChallenge: Codable, Sendable, Equatable {
    var offer: AuthenticationOffer
    /// The URL of the challenged hop.
    var url: URL
    var previousFailureCount: Int
    var response: TaskResponse
}

/// Something the task tells its delegate, completion handler or stream.
enum TaskDelivery: Codable, Sendable, Equatable {
    /// The final response of a data or upload task.
    case response(TaskResponse)
    /// Body bytes of a data or upload task that are not collected for a completion handler.
    case data(Data)
    /// `didSendBodyData`.
    case sentBodyData(delta: Int64, total: Int64, expected: Int64)
    /// `didWriteData` of a download.
    case wroteData(delta: Int64, total: Int64, expected: Int64)
    /// `didResumeAtOffset` of a download made from resume data.
    case resumed(offset: Int64, expectedTotal: Int64)
    /// `taskIsWaitingForConnectivity`: once per task.
    case waitingForConnectivity
    /// `didReceiveInformationalResponse`: a 1xx response other than 100 and 101, before the final one.
    case informational(TaskResponse)
}

/// How a task ended.
enum TaskOutcome: Codable, Sendable, Equatable {
    case success
    case failure(CourierError)

    var error: CourierError? {
        if case .failure(let error) = self {
            return error
        }
        return nil
    }
}
