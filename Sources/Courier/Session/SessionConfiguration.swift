public import Foundation
public import Logging
public import Metrics
public import Tracing

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// How a ``Session`` behaves: a value type, copied when the session is created.
///
/// Start from ``default`` or ``ephemeral`` and change what you need:
/// ```swift
/// var config = SessionConfiguration.default
/// config.httpMaximumConnectionsPerHost = 16
/// ```
public struct SessionConfiguration: Sendable {
    /// Which certificate authorities a session trusts for `https`.
    public enum TrustedCertificateAuthorities: Sendable, Hashable {
        /// The system's trust store (the default).
        case system
        /// Only the CA certificates in this PEM data (one or more `-----BEGIN CERTIFICATE-----` blocks).
        case pem(Data)

        /// The PEM data of ``pem(_:)``; nil for ``system``.
        var pem: Data? {
            if case .pem(let data) = self { return data }
            return nil
        }
    }

    /// The process-wide configuration: cookies go to ``CookieStorage/shared`` (in memory), credentials come from
    /// ``CredentialStorage/shared`` (`.permanent` ones kept in a file) and HSTS from ``HSTSStorage/shared`` (kept in a
    /// file).
    public static var `default`: SessionConfiguration {
        var configuration = SessionConfiguration(cookieStorage: CookieStorage.shared)
        configuration.urlCredentialStorage = CredentialStorage.shared
        configuration.hstsStorage = HSTSStorage.shared
        return configuration
    }

    /// A configuration that keeps nothing beyond the session: cookies and credentials live in private in-memory
    /// stores.
    public static var ephemeral: SessionConfiguration {
        var configuration = SessionConfiguration(cookieStorage: CookieStorage())
        configuration.hstsStorage = HSTSStorage()
        configuration.isEphemeral = true
        return configuration
    }

    /// A configuration whose transfers run in courierd, the background transfer service, and go on after this
    /// process exits, is suspended, crashes or is killed (docs/daemon.md).
    ///
    /// Create the session with a delegate (a ``SessionDownloadDelegate`` for downloads): background sessions report
    /// through it only. They run download tasks, and upload tasks from a file; beyond Apple's, also upload tasks from
    /// `Data` (the body is written to a file at `resume()`) and data tasks (courierd writes the body to a file, and the
    /// data delegate gets it whole when the task ends, after a relaunch too); redirects are followed without asking
    /// and network failures are retried until ``timeoutIntervalForResource``. After a relaunch, create the session
    /// again with the same identifier: the events it missed are delivered, then
    /// ``SessionDelegate/urlSessionDidFinishEvents(forBackgroundURLSession:)``.
    public static func background(withIdentifier identifier: String) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.identifier = identifier
        return configuration
    }

    /// True for ``ephemeral`` configurations.
    public private(set) var isEphemeral = false

    /// The background session's identifier; nil for other configurations.
    public private(set) var identifier: String?

    /// Background sessions: courierd relaunches the app when events are pending and it is not running. Default true.
    public var sessionSendsLaunchEvents = true

    /// Background sessions: transfers wait for external power and an unmetered network. Default false.
    public var isDiscretionary = false

    /// Background sessions: when false, transfers wait while the network is metered. Default true.
    public var allowsExpensiveNetworkAccess = true

    /// Background sessions: the command line courierd runs to relaunch the app for pending events (with
    /// `COURIER_BACKGROUND_LAUNCH=urlsession:<identifier>` in its environment). Nil (the default): the
    /// application's `Application.Configuration.launchCommand`, which is this executable with no arguments unless
    /// set — not the arguments this process was started with, which may be what started the transfers (a relaunch
    /// with them would start them again). Sent to courierd with each connection of the session.
    public var backgroundLaunchCommand: [String]?

    /// Where the courierd of a background session is found (and started); nil for this user's usual place.
    package var daemonPaths: DaemonPaths?
    /// Every spec, decision and event of an in-process session crosses the backend seam through its encoding
    /// (``SerialisedBackend``): `COURIER_TRANSFER_BACKEND=serialised`, or a test that compares backends.
    package var serialisesBackend = SerialisedBackend.isSelected
    /// A slow disk, for tests: the engine's disk writers wait this long before every write of a download chunk.
    package var simulatedDiskWriteDelay: Duration = .zero

    /// Headers added to every request that does not already set them.
    public var httpAdditionalHeaders: [String: String]?

    /// Idle timeout: a task fails with `.timedOut` when no byte moves in either direction for this long, noticed up to
    /// a tenth of it later (0.1 s to 10 s: the engine checks its idle transfers that often).
    /// A request's `timeoutInterval`, when smaller, wins. Default 60 seconds.
    public var timeoutIntervalForRequest: TimeInterval = 60

    /// Deadline for the whole task, across all redirects and authentication retries. Default 7 days.
    public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 60 * 60

    /// Connections per host (per session). Default 6.
    public var httpMaximumConnectionsPerHost: Int = 6

    /// Transfers running at once in this session; more are queued by priority. Default 1024.
    public var maximumConcurrentTransfers: Int = 1024

    /// Loop threads of the session's transfer engine. Default: the number of active processors, at most 4. Each loop
    /// keeps its own connections, so an HTTP/2 host gets one connection per loop; 1 gives one connection per host, as
    /// curl and Apple's URLSession keep (figures in docs/engine.md, "HTTP/2").
    public var engineLoopCount: Int = min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4)

    /// The proxies to use, in the keys of Foundation's `connectionProxyDictionary`: `"HTTPEnable"` (1), `"HTTPProxy"`
    /// (host) and `"HTTPPort"` for `http` URLs, `"HTTPSEnable"`, `"HTTPSProxy"` and `"HTTPSPort"` for `https` ones (a
    /// tunnel through `CONNECT`; a proxy host given as `https://host:port` is reached over TLS itself),
    /// `"SOCKSEnable"`, `"SOCKSProxy"` and `"SOCKSPort"` (default 1080) for the URLs of a scheme with no proxy of its
    /// own (SOCKS5 with names resolved by the proxy, or `"SOCKSVersion": 4` for SOCKS4a), with `"SOCKSUser"` and
    /// `"SOCKSPassword"` for a SOCKS5 proxy that asks for them, and `"ExceptionsList"` (host names or domains that
    /// bypass them). nil (the default) uses the environment's `http_proxy`, `https_proxy`, `all_proxy` and
    /// `no_proxy`, as curl reads them (`socks5h://` included); an empty dictionary uses no proxy at all. An HTTP proxy
    /// that asks for a credential (407 with `Proxy-Authenticate`, Basic or Digest) is a challenge for the delegate,
    /// whose protection space is the proxy's (`isProxy()`); a credential in the proxy's URL
    /// (`http://user:password@proxy:3128`, environment included) is sent from the start. Background sessions carry it
    /// to courierd (the environment meant is then courierd's).
    public var connectionProxyDictionary: [AnyHashable: Any]? {
        get { proxySettings?.dictionary }
        set { proxySettings = newValue.map(ProxySettings.init) }
    }

    /// ``connectionProxyDictionary``, read once.
    var proxySettings: ProxySettings?

    /// Whether a task that finds no network waits for one instead of failing (`notConnectedToInternet`, or a host
    /// name that cannot be resolved while the system has no route off the machine): its delegate hears
    /// `urlSession(_:taskIsWaitingForConnectivity:)` once, and the task begins when a route returns (looked at when
    /// the kernel announces a change of links, addresses or routes), bounded by `timeoutIntervalForResource` (then
    /// `timedOut`). Default false. A background session's tasks always wait: courierd retries network failures
    /// itself.
    public var waitsForConnectivity = false

    /// The oldest TLS version the session's connections accept. Default `.TLSv10` (whatever the TLS library
    /// allows, TLS 1.2 with this OpenSSL). A server that offers only older ones fails with `secureConnectionFailed`.
    public var tlsMinimumSupportedProtocolVersion: TLSProtocolVersion = .TLSv10

    /// The newest TLS version the session's connections offer. Default `.TLSv13`.
    public var tlsMaximumSupportedProtocolVersion: TLSProtocolVersion = .TLSv13

    /// Public-key pins by host name (exact, lowercased): a connection to a pinned host must present a certificate
    /// whose public key (the SHA-256 of its SubjectPublicKeyInfo, base64; ``ServerTrust/publicKeyHashes`` shows
    /// them) is one of the host's, as Apple's `NSPinnedLeafIdentities` pins a leaf. A server with another key fails
    /// with `serverCertificateUntrusted` after the handshake, before any byte of the request is sent. The chain is
    /// still verified as usual. Background sessions carry the pins to courierd. Default: none.
    public var pinnedPublicKeys: [String: [String]] = [:]

    /// The certificate and key the session presents to servers that ask for one (mutual TLS), or nil (the
    /// default). A server that requires one and gets none fails the task with `clientCertificateRequired`.
    /// Background sessions carry it to courierd (in its journal, as the tasks' requests are).
    public var clientIdentity: ClientIdentity?

    /// The certificate and key the session presents to an HTTPS proxy (one given as `https://host:port` in
    /// ``connectionProxyDictionary``) that asks for one, or nil (the default). The proxy's certificate is verified
    /// against ``trustedCertificateAuthorities``, as servers' are.
    public var proxyClientIdentity: ClientIdentity?

    /// Every connection goes to this Unix-domain socket instead of the URL's host and port (which still name the
    /// `Host` field and, for `https`, the TLS server name): a local daemon's HTTP API. A URL of the form
    /// `http+unix://%2Fpath%2Fto%2Fsocket/resource` names its socket itself. Default nil.
    public var unixSocketPath: String?

    /// Addresses to connect to for host names, instead of asking DNS (curl's `--resolve`): `["api.example.com":
    /// ["127.0.0.1"]]`. The URL, the `Host` field and TLS still use the name. Default: none.
    public var hostAddresses: [String: [String]] = [:]

    /// Which address family connections use: both (the default), IPv4 only or IPv6 only.
    public var addressFamily: AddressFamily = .any

    /// The local interface name, address or host name connections are made from (curl's `--interface`), or nil
    /// (the default) for the system's choice.
    public var sourceInterface: String?

    /// A DNS-over-HTTPS resolver (`https://dns.example/dns-query`) for the session's host names, or nil (the
    /// default) for the system's resolver.
    public var dnsOverHTTPSURL: URL?

    /// Whether every connection setting above keeps libcurl's default (no pin, default TLS versions, no identity, no
    /// targeting): a hop then needs no connection options unless the delegate judges its server.
    var connectionSettingsAreDefault: Bool {
        pinnedPublicKeys.isEmpty && tlsMinimumSupportedProtocolVersion == .TLSv10
            && tlsMaximumSupportedProtocolVersion == .TLSv13 && clientIdentity == nil && proxyClientIdentity == nil
            && unixSocketPath == nil && hostAddresses.isEmpty && addressFamily == .any && sourceInterface == nil
            && dnsOverHTTPSURL == nil
    }

    /// The address families of ``addressFamily``.
    public enum AddressFamily: Sendable, Hashable {
        case any
        case ipv4
        case ipv6
    }

    /// Whether to offer HTTP/2 over TLS (ALPN). Plain `http` always speaks HTTP/1.1. Default true.
    public var allowsHTTP2 = true

    /// Loaders asked, in order, for every exchange of the session's tasks before the network (``SessionURLProtocol``,
    /// Foundation's `protocolClasses`): the first whose `canInit(with:)` accepts the request loads it. Empty (the
    /// default): every exchange goes to the network, and the check costs nothing. In-process sessions only: a
    /// background session ignores it, as on Apple's platforms.
    public var protocolClasses: [SessionURLProtocol.Type] = []

    /// The URL cache of the session's data tasks, or nil (the default) for none. With a cache, a GET is answered
    /// from it as RFC 9111 allows (fresh by `Cache-Control: max-age`, `Expires`, or 10 % of the time since
    /// `Last-Modified`), a stale entry with an `ETag` or `Last-Modified` is revalidated (`If-None-Match`,
    /// `If-Modified-Since`) and a 304 serves the stored body, and storable responses no larger than 5 % of the
    /// cache's capacity are stored (after `urlSession(_:dataTask:willCacheResponse:completionHandler:)`). Download
    /// tasks and background sessions never use it, as on iOS for background sessions.
    ///
    /// Apple's default is `URLCache.shared`; Courier's is nil, so that a server or a tool never serves a stored
    /// response by surprise (and writes nothing under `~/.cache`). Set `URLCache.shared` for Apple's behaviour, or
    /// `URLCache(memoryCapacity:diskCapacity:diskPath:)` for a cache of the session's own.
    public var urlCache: URLCache?

    /// How a request whose `cachePolicy` is `.useProtocolCachePolicy` (every request made from a URL or an
    /// `HTTPRequest`) uses ``urlCache``. Default `.useProtocolCachePolicy`; `.returnCacheDataDontLoad` with nothing
    /// stored fails with `resourceUnavailable`.
    public var requestCachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy

    /// The most bytes per second the session's transfers receive together (all of them, whatever their hosts), or
    /// nil (the default) for no limit; with a ``BandwidthLimit/window`` only during those hours. Held on average by
    /// pausing the transfers that would go past it. A task's own ``SessionTask/maximumBytesPerSecond`` applies as
    /// well. Background sessions ignore it: courierd's `--limit-rate` caps all of its transfers.
    public var bandwidthLimit: BandwidthLimit?

    /// Limits shared with other sessions (courierd's `--limit-rate` for every session it runs).
    package var sharedBandwidthLimiters: [BandwidthLimiter] = []

    /// The most bytes a data or upload task collects in memory for its completion handler or an async
    /// `data(for:)` / `data(from:)` / `upload(for:)` (decoded bytes), or nil (the default, as URLSession) for no
    /// limit. A longer body fails the task with `dataLengthExceedsMaximum`: before it comes when its
    /// `Content-Length` says so, else as soon as the bytes pass the limit (curl's `--max-filesize`). Bodies handed to
    /// a delegate, to `bytes(for:)` or to a file are not collected and not limited (they are paced by their
    /// consumer instead). A server's body otherwise takes as much memory as it is long.
    public var maximumCollectedBodyLength: Int?

    /// The most ranged connections one download task uses at once (``DownloadTask/maximumSegments``); 1 (the
    /// default) for one, at most 16.
    public var maximumSegmentsPerDownload = 1

    /// Where the session's figures go (swift-metrics: tasks running, completed by outcome, failures by code, bytes;
    /// see <doc:TransferFeatures>), or nil (the default) for `MetricsSystem.factory` as it is when the session is
    /// made.
    public var metricsFactory: (any MetricsFactory)?

    /// The tracer of the tasks' spans (swift-distributed-tracing), or nil (the default) for
    /// `InstrumentationSystem.tracer` as it is when the session is made; with the no-op tracer no span is made.
    /// Each task's span is a child of the `ServiceContext.current` of its `resume()`, and its context goes on the
    /// task's requests (W3C `traceparent` with a W3C propagating tracer).
    public var tracer: (any Tracer)?

    /// The hosts reached over HTTPS only (HSTS, RFC 6797): an `http` request to one goes out as `https`. Recorded from
    /// the `Strict-Transport-Security` field of HTTPS responses (never for an IP address). ``default`` uses
    /// ``HSTSStorage/shared`` (kept in a file), ``ephemeral`` a private store in memory; nil ignores HSTS.
    public var hstsStorage: HSTSStorage?

    /// The cookie store, or nil to handle no cookies at all.
    public var httpCookieStorage: CookieStorage?

    /// Whether to send cookies from ``httpCookieStorage`` and store the ones responses set. Default true.
    public var httpShouldSetCookies = true

    /// Which cookies responses may set. Default `.onlyFromMainDocumentDomain`, which Courier treats as
    /// "cookies for the response's own host".
    public var httpCookieAcceptPolicy: HTTPCookie.AcceptPolicy = .onlyFromMainDocumentDomain

    /// Credentials used when a challenge is handled by default (no delegate, or `.performDefaultHandling`).
    public var urlCredentialStorage: CredentialStorage? = CredentialStorage()

    /// Which certificate authorities `https` connections trust. Verification is always on. A background session
    /// hands its PEM data to courierd with the session (courierd keeps it with the session's record), which verifies
    /// the session's servers with it from the configuration it first runs the session with.
    public var trustedCertificateAuthorities: TrustedCertificateAuthorities = .system

    /// Where partial downloads kept for resume data live. Resume data names its file relative to this.
    /// Default: `courier-resume` in the temporary directory.
    public var resumeDataDirectory: URL = FileManager.default.temporaryDirectory
        .appendingPathComponent("courier-resume", isDirectory: true)

    /// Where a session creates its staging files (a subdirectory per session). Default: the temporary directory.
    public var temporaryDirectory: URL = FileManager.default.temporaryDirectory

    /// A logger for the session's diagnostics; nil (the default) logs nothing.
    public var logger: Logger?

    init(cookieStorage: CookieStorage) {
        self.httpCookieStorage = cookieStorage
    }
}
