public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A loader that answers requests in place of the network, in the shape of Foundation's `URLProtocol`: list the
/// subclass in ``SessionConfiguration/protocolClasses``, and every exchange of the session's tasks whose request
/// ``canInit(with:)`` accepts is loaded by a new instance of it: ``startLoading()`` reports the response, the body and
/// the end (or a redirect, or an error) to ``client``; ``stopLoading()`` is called when the task is cancelled.
///
/// Test suites that stub the network with a protocol class port by renaming `URLProtocol` to `SessionURLProtocol`
/// (and `URLSessionConfiguration` to ``SessionConfiguration``). It is also the session's one place for middleware:
/// a subclass may load the request itself through another ``Session`` (one without the class in its
/// `protocolClasses`) and pass on what it gets, adding what every request of the session needs (a refreshed token, a
/// log line, a retry). Everything after the exchange is the task's as for a network load: redirects go to the
/// delegate, 401/407 challenges are answered, cookies and the URL cache apply, metrics and progress are reported.
///
/// In-process sessions only (a background session's transfers run in courierd, as on Apple's platforms). The request
/// a protocol sees carries the exchange's URL, method, header fields and body (`httpBody`; a streamed body is not given
/// to it); a credential the task answered a 401 with comes as an `Authorization: Basic` field (Digest and NTLM are
/// handshakes of the engine's, which a protocol does not take part in). Authentication challenges from a protocol
/// (`URLProtocolClient`'s `didReceive challenge`) and `cachedResponseIsValid` are not offered: report a 401 response
/// instead, and the task's delegate is asked as for a server's.
///
/// `@unchecked Sendable`: ``request``, ``cachedResponse`` and ``client`` never change; ``task`` is set once, before
/// ``startLoading()``. A subclass that keeps state of its own is responsible for it.
open class SessionURLProtocol: @unchecked Sendable {
    /// The exchange's request (after ``canonicalRequest(for:)``).
    public let request: URLRequest
    /// Always nil: the session's URL cache answers before an exchange is made.
    public let cachedResponse: CachedURLResponse?
    /// Where the load reports; calls from any thread, in order, none after the end.
    public let client: (any SessionURLProtocolClient)?
    /// The task whose exchange this is.
    public internal(set) weak var task: SessionTask?

    /// Whether this class loads `request`. Called for every exchange, with each class of `protocolClasses` in order
    /// until one accepts. Default: false.
    open class func canInit(with request: URLRequest) -> Bool {
        false
    }

    /// The request an instance gets (add or normalise fields here). Default: `request` itself.
    open class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// Whether two requests load the same resource (for `URLProtocol` code that overrides it; Courier's URL cache
    /// keys entries itself). Default: equal URLs.
    open class func requestIsCacheEquivalent(_ a: URLRequest, to b: URLRequest) -> Bool {
        a.url == b.url
    }

    public required init(
        request: URLRequest,
        cachedResponse: CachedURLResponse?,
        client: (any SessionURLProtocolClient)?
    ) {
        self.request = request
        self.cachedResponse = cachedResponse
        self.client = client
    }

    /// Starts the load: report to ``client``. Called once, on a thread of Courier's, after ``task`` is set.
    open func startLoading() {}

    /// The task was cancelled (or its session invalidated): stop, and report nothing more. Called at most once.
    open func stopLoading() {}

    /// A value kept with `request` under `key` (Foundation's `URLProtocol.property(forKey:in:)`), e.g. a mark that a
    /// request was handled already, so that `canInit` can refuse it.
    public class func property(forKey key: String, in request: URLRequest) -> Any? {
        URLProtocol.property(forKey: key, in: request)
    }

    /// Keeps `value` with `request` under `key`.
    public class func setProperty(_ value: Any, forKey key: String, in request: NSMutableURLRequest) {
        URLProtocol.setProperty(value, forKey: key, in: request)
    }

    /// Forgets the value kept with `request` under `key`.
    public class func removeProperty(forKey key: String, in request: NSMutableURLRequest) {
        URLProtocol.removeProperty(forKey: key, in: request)
    }
}

/// What a ``SessionURLProtocol`` reports its load to, in the shape of Foundation's `URLProtocolClient`. Calls may come
/// from any thread, one at a time; the first of `urlProtocolDidFinishLoading`, `didFailWithError` or
/// `wasRedirectedTo` ends the load, and later calls are ignored.
public protocol SessionURLProtocolClient: AnyObject, Sendable {
    /// The response (once, before any data). `policy` is not used: the session's URL cache applies its own rules.
    func urlProtocol(
        _ protocol: SessionURLProtocol,
        didReceive response: URLResponse,
        cacheStoragePolicy policy: URLCache.StoragePolicy
    )
    /// Body bytes, in order, zero or more times.
    func urlProtocol(_ protocol: SessionURLProtocol, didLoad data: Data)
    /// The body is complete.
    func urlProtocolDidFinishLoading(_ protocol: SessionURLProtocol)
    /// The load failed: a ``CourierIPC/CourierError`` is passed on as it is; any other error becomes one with the code
    /// of its `URLError` when it is one, else `.unknown`.
    func urlProtocol(_ protocol: SessionURLProtocol, didFailWithError error: any Error)
    /// The load ends in a redirect to `request` (`redirectResponse` its 3xx): the task follows it as it follows any,
    /// asking its delegate, and its next exchange is made (through a protocol class again, if one accepts it).
    func urlProtocol(
        _ protocol: SessionURLProtocol,
        wasRedirectedTo request: URLRequest,
        redirectResponse: URLResponse
    )
}
