package import Foundation

/// Everything a backend needs for one HTTP exchange (one hop of a task), as a serialisable value.
///
/// Built by a task for each hop and handed to ``TransferBackend/submit(_:as:)``. Files are named by path, never by
/// descriptor, so that a spec means the same thing in another process (the daemon backend).
package struct TransferSpec: Codable, Sendable, Equatable {
    /// What the request body is read from.
    package enum Body: Codable, Sendable, Equatable {
        case none
        /// Sent as it is; the backend reads it in place, without a second copy.
        case data(Data)
        /// Sent from the file at `path`, whose length at submit time is the body's length.
        case file(path: String)
        /// Supplied by the task as it reads its body stream (``TransferBackend``'s `supply`); `length` nil: unknown
        /// (HTTP/1.1 sends it chunked). In-process only: courierd refuses it.
        case streamed(length: Int64?)
    }

    /// Where the response body goes.
    package enum Sink: Codable, Sendable, Equatable {
        /// Delivered in DATA events.
        case memory
        /// Written to the file at `path`; `append` keeps the bytes already there (a resumed download).
        case file(path: String, append: Bool)
        case discard
    }

    package enum Authentication: Codable, Sendable, Equatable {
        case none
        case basic(user: String, password: String)
        case digest(user: String, password: String)
        /// NTLM (libcurl's handshake, on one connection).
        case ntlm(user: String, password: String)
        /// SPNEGO (Negotiate: Kerberos through GSS-API, with the system's ticket).
        case negotiate
    }

    /// What a backend that keeps the task beyond this process (courierd) needs of the task itself: set for
    /// background sessions only.
    package struct TaskDetails: Codable, Sendable, Equatable {
        package enum Kind: String, Codable, Sendable {
            case data
            case upload
            case download
        }

        package var kind: Kind
        package var taskDescription: String?
        package var priority: Float
        /// From `downloadTask(withResumeData:)`: the backend goes on from the partial file it names.
        package var resumeData: Data?
        /// The task reports to the session's delegate (it has no completion handler).
        package var reportsToDelegate: Bool
        /// A background task's `earliestBeginDate`: courierd starts it no sooner, and first asks the app
        /// (`willBeginDelayedRequest`) when it holds the session. Nil once that is decided.
        package var earliestBeginDate: Date?
        /// `countOfBytesClientExpectsToSend` / `…ToReceive`: the app's guess of the task's size (nil: unknown), which
        /// courierd schedules by (smaller ones first; a small discretionary task need not wait for an unmetered network).
        package var countOfBytesClientExpectsToSend: Int64?
        package var countOfBytesClientExpectsToReceive: Int64?
        /// The download's expected checksum (courierd verifies it before handing the file over).
        package var expectedChecksum: Checksum?
        /// The task's own bandwidth limit (courierd applies it to each attempt).
        package var maximumBytesPerSecond: Int64?
        /// ``DownloadTask/maximumSegments`` (courierd's attempts use as many connections).
        package var maximumSegments: Int?
        /// The request's URL with its `user:password@` (the spec's URL goes without them): courierd's attempts answer
        /// a challenge from their origin with them, as the app's own session does. Never listed (`listTasks`).
        package var credentialURL: String?

        /// What the app expects the task to move in all, when it said (either count).
        package var clientExpectedBytes: Int64? {
            let counts = [countOfBytesClientExpectsToSend, countOfBytesClientExpectsToReceive].compactMap { $0 }
            return counts.isEmpty ? nil : counts.reduce(0, +)
        }

        package init(
            kind: Kind,
            taskDescription: String? = nil,
            priority: Float = 0.5,
            resumeData: Data? = nil,
            reportsToDelegate: Bool = true,
            earliestBeginDate: Date? = nil,
            countOfBytesClientExpectsToSend: Int64? = nil,
            countOfBytesClientExpectsToReceive: Int64? = nil,
            expectedChecksum: Checksum? = nil,
            maximumBytesPerSecond: Int64? = nil,
            maximumSegments: Int? = nil
        ) {
            self.kind = kind
            self.taskDescription = taskDescription
            self.priority = priority
            self.resumeData = resumeData
            self.reportsToDelegate = reportsToDelegate
            self.earliestBeginDate = earliestBeginDate
            self.countOfBytesClientExpectsToSend = countOfBytesClientExpectsToSend
            self.countOfBytesClientExpectsToReceive = countOfBytesClientExpectsToReceive
            self.expectedChecksum = expectedChecksum
            self.maximumBytesPerSecond = maximumBytesPerSecond
            self.maximumSegments = maximumSegments
        }
    }

    package var url: String
    package var method: String = "GET"
    /// "Name: value" lines, already merged (request, session additional headers, cookies).
    package var headers: [String] = []
    package var body: Body = .none
    /// Where a file body starts in its file (a resumed upload sends the rest from there).
    package var bodyOffset: Int64 = 0
    package var sink: Sink = .memory
    package var resumeOffset: Int64 = 0
    /// > 0: only this many bytes from ``resumeOffset`` (one segment of a segmented download; a 200 fails).
    package var rangeLength: Int64 = 0
    /// With a file sink and a GET: the most ranged connections the download uses at once (1: one). The backend
    /// splits a large entity whose server takes byte ranges (``DownloadSegment/split(length:count:)``).
    package var segments = 1
    /// The segments of a resumed segmented download (from its resume data): each goes on from its `done`.
    package var segmentMap: [DownloadSegment]?
    /// Hold 3xx with a Location and 401/407 for the task to decide (`CR_FLAG_HOLD_REDIRECT_AND_AUTH`).
    package var holdRedirectAndAuth = true
    /// Hold every final response until ``TransferBackend/decide(_:_:)`` (`CR_FLAG_ASK_RESPONSE`).
    package var askResponse = false
    package var noBody = false
    /// An HTTP/1.1 Upgrade (a WebSocket handshake): a 101 is the final response, the body goes out raw after the head
    /// and the server's bytes come back as the body (the engine's `CR_FLAG_UPGRADE`).
    package var upgrade = false
    /// Offer the content codings libcurl decodes and hand over decoded bytes (`CR_FLAG_DECODE`).
    package var decodesContent = true
    package var http2 = true
    package var authentication: Authentication = .none
    /// The proxy: nil leaves the environment's (`http_proxy`, `https_proxy`, `no_proxy`, as curl reads them), ""
    /// uses none, else a proxy URL; `noProxy` lists hosts that bypass it (curl's `NO_PROXY` syntax).
    package var proxy: String?
    package var noProxy: String?
    /// A credential for the proxy (after a 407).
    package var proxyAuthentication: Authentication = .none
    /// The task's own limit in each direction (``SessionTask/maximumBytesPerSecond``); 0: none.
    package var maximumBytesPerSecond: Int64 = 0
    /// The most body bytes the hop keeps (``SessionConfiguration/maximumCollectedBodyLength`` for a collected
    /// body); 0: none.
    package var maximumBodyLength: Int64 = 0
    package var idleTimeoutMilliseconds: Int64 = 0
    package var totalTimeoutMilliseconds: Int64 = 0
    package var priority: Int32 = 0
    /// The digest a file sink's transfer computes while writing (`cr_request_t.digest`): nil for none, or the
    /// algorithm; ``announcedDigest`` for the one the response's digest fields name.
    package var digest: Checksum.Algorithm?
    /// With a file sink and no ``digest``: compute the one the response announces (`CR_DIGEST_AUTO`).
    package var announcedDigest = false
    /// TLS trust, versions and client certificate, and where the connection goes; nil for libcurl's defaults.
    package var connection: ConnectionOptions? {
        get { connectionBox?.value }
        set { connectionBox = newValue.map(Boxed.init) }
    }
    /// ``connection``, boxed: most specs have none, and it is 232 bytes inline (every background task courierd holds
    /// carried them).
    private var connectionBox: Boxed<ConnectionOptions>?
    package var task: TaskDetails?

    /// A GET of `url` into memory; the rest is set field by field.
    package init(url: String) {
        self.url = url
    }
}

extension TransferSpec {
    /// The field name of a header line (`Name: value`), lowercased.
    package static func fieldName(of line: String) -> String {
        let name = line.utf8.prefix { $0 != UInt8(ascii: ":") }
        return String(decoding: trimmed(name), as: UTF8.self).lowercased()
    }

    /// A header line (`Name: value`) as its name (as written) and its value (trimmed); nil for a line with no colon.
    package static func field(of line: String) -> (name: String, value: String)? {
        guard let colon = line.utf8.firstIndex(of: UInt8(ascii: ":")) else {
            return nil
        }
        let value = trimmed(line.utf8[line.utf8.index(after: colon)...])
        return (String(line[..<colon]), String(decoding: value, as: UTF8.self))
    }

    /// `bytes` without the spaces and tabs around them: the only white space a header line has around its name and
    /// value (RFC 9110 §5.6.3), trimmed byte by byte (every task's header lines are read so, by both sides).
    private static func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        var bytes = bytes
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isSpace(first) {
            bytes.removeFirst()
        }
        while let last = bytes.last, isSpace(last) {
            bytes.removeLast()
        }
        return bytes
    }

    private enum CodingKeys: String, CodingKey {
        case url, method, headers, body, bodyOffset, sink, resumeOffset, rangeLength, segments, segmentMap
        case holdRedirectAndAuth, askResponse, noBody, decodesContent, http2, authentication, proxy, noProxy
        case proxyAuthentication, maximumBytesPerSecond, idleTimeoutMilliseconds, totalTimeoutMilliseconds, priority
        case digest, announcedDigest, task, maximumBodyLength, connection, upgrade
    }

    /// Encodes the URL and every field that differs from its default (``init(from:)`` gives a missing field its
    /// default): a spec is sent with each `createTask`, journaled with its task and listed with it, and most of its
    /// fields keep their defaults.
    package func encode(to encoder: any Encoder) throws {
        var values = encoder.container(keyedBy: CodingKeys.self)
        let defaults = TransferSpec(url: "")
        func value<Value: Encodable & Equatable>(_ value: Value, _ fallback: Value, _ key: CodingKeys) throws {
            if value != fallback {
                try values.encode(value, forKey: key)
            }
        }
        try values.encode(url, forKey: .url)
        try value(method, defaults.method, .method)
        try value(headers, defaults.headers, .headers)
        try value(body, defaults.body, .body)
        try value(bodyOffset, defaults.bodyOffset, .bodyOffset)
        try value(sink, defaults.sink, .sink)
        try value(resumeOffset, defaults.resumeOffset, .resumeOffset)
        try value(rangeLength, defaults.rangeLength, .rangeLength)
        try value(segments, defaults.segments, .segments)
        try values.encodeIfPresent(segmentMap, forKey: .segmentMap)
        try value(holdRedirectAndAuth, defaults.holdRedirectAndAuth, .holdRedirectAndAuth)
        try value(askResponse, defaults.askResponse, .askResponse)
        try value(noBody, defaults.noBody, .noBody)
        try value(upgrade, defaults.upgrade, .upgrade)
        try value(decodesContent, defaults.decodesContent, .decodesContent)
        try value(http2, defaults.http2, .http2)
        try value(authentication, defaults.authentication, .authentication)
        try values.encodeIfPresent(proxy, forKey: .proxy)
        try values.encodeIfPresent(noProxy, forKey: .noProxy)
        try value(proxyAuthentication, defaults.proxyAuthentication, .proxyAuthentication)
        try value(maximumBytesPerSecond, defaults.maximumBytesPerSecond, .maximumBytesPerSecond)
        try value(maximumBodyLength, defaults.maximumBodyLength, .maximumBodyLength)
        try value(idleTimeoutMilliseconds, defaults.idleTimeoutMilliseconds, .idleTimeoutMilliseconds)
        try value(totalTimeoutMilliseconds, defaults.totalTimeoutMilliseconds, .totalTimeoutMilliseconds)
        try value(priority, defaults.priority, .priority)
        try values.encodeIfPresent(digest, forKey: .digest)
        try value(announcedDigest, defaults.announcedDigest, .announcedDigest)
        try values.encodeIfPresent(connection, forKey: .connection)
        try values.encodeIfPresent(task, forKey: .task)
    }

    /// Decodes a spec of this version or an earlier one: a field an earlier courierd did not journal (or an earlier
    /// app did not send), or that was left out as its default, takes its default, so that journals and apps of
    /// earlier versions still decode.
    package init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        func value<Value: Decodable>(_ key: CodingKeys, _ fallback: Value) throws -> Value {
            try values.decodeIfPresent(Value.self, forKey: key) ?? fallback
        }
        let defaults = TransferSpec(url: "")
        self.init(url: try values.decode(String.self, forKey: .url))
        method = try value(.method, defaults.method)
        headers = try value(.headers, defaults.headers)
        body = try value(.body, defaults.body)
        bodyOffset = try value(.bodyOffset, defaults.bodyOffset)
        sink = try value(.sink, defaults.sink)
        resumeOffset = try value(.resumeOffset, defaults.resumeOffset)
        rangeLength = try value(.rangeLength, defaults.rangeLength)
        segments = try value(.segments, defaults.segments)
        segmentMap = try values.decodeIfPresent([DownloadSegment].self, forKey: .segmentMap)
        holdRedirectAndAuth = try value(.holdRedirectAndAuth, defaults.holdRedirectAndAuth)
        askResponse = try value(.askResponse, defaults.askResponse)
        noBody = try value(.noBody, defaults.noBody)
        upgrade = try value(.upgrade, defaults.upgrade)
        decodesContent = try value(.decodesContent, defaults.decodesContent)
        http2 = try value(.http2, defaults.http2)
        authentication = try value(.authentication, defaults.authentication)
        proxy = try values.decodeIfPresent(String.self, forKey: .proxy)
        noProxy = try values.decodeIfPresent(String.self, forKey: .noProxy)
        proxyAuthentication = try value(.proxyAuthentication, defaults.proxyAuthentication)
        maximumBytesPerSecond = try value(.maximumBytesPerSecond, defaults.maximumBytesPerSecond)
        maximumBodyLength = try value(.maximumBodyLength, defaults.maximumBodyLength)
        idleTimeoutMilliseconds = try value(.idleTimeoutMilliseconds, defaults.idleTimeoutMilliseconds)
        totalTimeoutMilliseconds = try value(.totalTimeoutMilliseconds, defaults.totalTimeoutMilliseconds)
        priority = try value(.priority, defaults.priority)
        digest = try values.decodeIfPresent(Checksum.Algorithm.self, forKey: .digest)
        announcedDigest = try value(.announcedDigest, defaults.announcedDigest)
        connection = try values.decodeIfPresent(ConnectionOptions.self, forKey: .connection)
        task = try values.decodeIfPresent(TaskDetails.self, forKey: .task)
    }
}
