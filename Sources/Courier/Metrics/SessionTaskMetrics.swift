public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// What a task measured, delivered once by `urlSession(_:task:didFinishCollecting:)` before completion.
public struct SessionTaskMetrics: Sendable {
    /// One entry per HTTP exchange the task made (each redirect hop and each authentication retry), in order.
    public var transactionMetrics: [SessionTaskTransactionMetrics]
    /// From the first `resume()` to completion.
    public var taskInterval: DateInterval
    /// Redirects followed.
    public var redirectCount: Int
}

/// curl's timings and counters for one HTTP exchange, in the shape of `URLSessionTaskTransactionMetrics`.
public struct SessionTaskTransactionMetrics: Sendable {
    /// Where an exchange's response came from, as `URLSessionTaskMetrics.ResourceFetchType`.
    public enum ResourceFetchType: Int, Sendable {
        case unknown = 0
        /// From the network (a revalidation's 304 too).
        case networkLoad = 1
        /// From the session's URL cache, with no request sent; its timings are nil but the fetch start.
        case localCache = 3
    }

    /// Where the response came from.
    public var resourceFetchType: ResourceFetchType = .networkLoad
    /// The request of this exchange (built when read: a delegate that never looks at it does not pay for it).
    public var request: URLRequest {
        get {
            switch requestSource {
            case .task(let request): request.urlRequest
            case .set(let request): request
            }
        }
        set { requestSource = .set(newValue) }
    }
    /// The response, when one arrived: the task's own `HTTPURLResponse` (the one `task.response` returns), built the
    /// first time either is read.
    public var response: URLResponse? {
        get {
            switch responseSource {
            case .task(let response): response?.httpResponse
            case .set(let response): response
            }
        }
        set { responseSource = .set(newValue) }
    }
    private var requestSource: Source<TaskRequest, URLRequest>
    private var responseSource: Source<TaskResponse?, URLResponse?>
    /// When the exchange was handed to the engine.
    public var fetchStartDate: Date?
    public var domainLookupStartDate: Date?
    public var domainLookupEndDate: Date?
    public var connectStartDate: Date?
    public var secureConnectionStartDate: Date?
    public var secureConnectionEndDate: Date?
    public var connectEndDate: Date?
    public var requestStartDate: Date?
    public var requestEndDate: Date?
    public var responseStartDate: Date?
    public var responseEndDate: Date?
    /// `"http/1.0"`, `"http/1.1"`, `"h2"` or `"h3"`; nil when unknown.
    public var networkProtocolName: String?
    /// True when the exchange reused a connection.
    public var isReusedConnection: Bool
    public var countOfRequestHeaderBytesSent: Int64
    public var countOfRequestBodyBytesSent: Int64
    public var countOfResponseHeaderBytesReceived: Int64
    /// Body bytes as they came off the connection: before content decoding (`Content-Encoding`).
    public var countOfResponseBodyBytesReceived: Int64
    /// Body bytes after content decoding: what the task delivered. Equal to
    /// ``countOfResponseBodyBytesReceived`` when the body had no content coding.
    public var countOfResponseBodyBytesAfterDecoding: Int64
    public var remoteAddress: String?
    public var remotePort: Int?
    public var localAddress: String?
    public var localPort: Int?
    /// The time the exchange waited in the engine's queue before curl took it, in seconds.
    public var queuedDuration: TimeInterval?
}

extension SessionTaskTransactionMetrics {
    /// Where ``request`` and ``response`` come from: the task's own values, turned into Foundation's types when read,
    /// or what the app set.
    private enum Source<Task: Sendable, Set: Sendable>: Sendable {
        case task(Task)
        case set(Set)
    }

    init(request: TaskRequest, response: TaskResponse?, start: Date, engine m: TransferMetrics) {
        func date(_ microseconds: Int64) -> Date? {
            microseconds >= 0 ? start.addingTimeInterval(TimeInterval(microseconds) / 1_000_000) : nil
        }
        requestSource = .task(request)
        responseSource = .task(response)
        fetchStartDate = start
        let queued = max(m.queuedMicroseconds, 0)
        let lookupEnd = m.nameLookupMicroseconds > 0 ? m.nameLookupMicroseconds : -1
        domainLookupStartDate = lookupEnd >= 0 ? date(queued) : nil
        domainLookupEndDate = date(lookupEnd)
        let connected = m.connectMicroseconds > 0 && !m.reusedConnection
        connectStartDate = connected ? date(max(lookupEnd, queued)) : nil
        secureConnectionStartDate = connected && m.tlsMicroseconds > 0 ? date(m.connectMicroseconds) : nil
        secureConnectionEndDate = connected && m.tlsMicroseconds > 0 ? date(m.tlsMicroseconds) : nil
        connectEndDate = connected ? date(max(m.connectMicroseconds, m.tlsMicroseconds)) : nil
        requestStartDate = date(m.pretransferMicroseconds)
        requestEndDate = date(m.pretransferMicroseconds)
        responseStartDate = date(m.firstByteMicroseconds)
        responseEndDate = date(m.totalMicroseconds)
        switch m.httpVersion {
        case 10: networkProtocolName = "http/1.0"
        case 11: networkProtocolName = "http/1.1"
        case 20: networkProtocolName = "h2"
        case 30: networkProtocolName = "h3"
        default: networkProtocolName = nil
        }
        isReusedConnection = m.reusedConnection
        countOfRequestHeaderBytesSent = m.requestHeaderBytes
        countOfRequestBodyBytesSent = m.bodyBytesSent
        countOfResponseHeaderBytesReceived = m.responseHeaderBytes
        countOfResponseBodyBytesReceived = m.bodyBytesOnWire >= 0 ? m.bodyBytesOnWire : m.bodyBytesReceived
        countOfResponseBodyBytesAfterDecoding = m.bodyBytesReceived
        remoteAddress = m.remoteAddress.isEmpty ? nil : m.remoteAddress
        remotePort = m.remotePort > 0 ? m.remotePort : nil
        localAddress = m.localAddress.isEmpty ? nil : m.localAddress
        localPort = m.localPort > 0 ? m.localPort : nil
        queuedDuration = m.queuedMicroseconds >= 0 ? TimeInterval(m.queuedMicroseconds) / 1_000_000 : nil
    }
}
