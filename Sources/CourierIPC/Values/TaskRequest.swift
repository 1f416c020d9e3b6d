package import Foundation

#if canImport(FoundationNetworking)
package import FoundationNetworking
#endif

/// The request a task runs, as the task machine, the backends and the journal use it: URL, method, header
/// fields, body and timeout, read once when the task is made.
///
/// A task made from a `URLRequest` keeps that request too, so that ``urlRequest`` (what `originalRequest`,
/// `currentRequest`, the redirect delegate and the metrics show) still carries everything the caller set (cache
/// policy, service type); the mutations here change both. A task made from a `URL` or a swift-http-types
/// `HTTPRequest` makes no `URLRequest` unless someone asks for one: FoundationNetworking's `URLRequest` is an
/// object with its own allocations, and reading its properties costs a bridge per call.
///
/// Encoded (IPC, journal) as URL, method, header fields, body and timeout; a decoded request has `URLRequest`'s
/// defaults for everything else. Equality compares the encoded parts.
package struct TaskRequest: Codable, Sendable, Equatable {
    package private(set) var url: URL?
    /// Everything but the URL, or nil for a plain GET (a task made from a `URL`): such a request is a `URL` and
    /// a pointer, and so are the copies a task keeps (original, current, one per hop).
    private var details: Details?

    /// `URLRequest`'s default timeout.
    package static let defaultTimeoutInterval: TimeInterval = 60

    /// Everything but the URL, as values; `Fields()` is a plain GET.
    private struct Fields: Sendable, Equatable {
        var method = "GET"
        var headerFields: [String: String] = [:]
        var body: Data?
        var timeoutInterval = TaskRequest.defaultTimeoutInterval
        /// The caller's request, kept in step with the fields above.
        var source: URLRequest?
    }

    /// ``Fields`` on the heap, immutable: a change makes a new one.
    private final class Details: Sendable {
        let fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    package init(_ request: URLRequest) {
        url = request.url
        details = Details(
            Fields(
                method: request.httpMethod ?? "GET",
                headerFields: request.allHTTPHeaderFields ?? [:],
                body: request.httpBody,
                timeoutInterval: request.timeoutInterval,
                source: request
            )
        )
    }

    package init(
        url: URL?,
        method: String = "GET",
        headerFields: [String: String] = [:],
        body: Data? = nil,
        timeoutInterval: TimeInterval = TaskRequest.defaultTimeoutInterval
    ) {
        self.url = url
        let fields = Fields(method: method, headerFields: headerFields, body: body, timeoutInterval: timeoutInterval)
        details = fields == Fields() ? nil : Details(fields)
    }

    private var fields: Fields {
        details?.fields ?? Fields()
    }

    /// As given ("GET" when none was).
    package var method: String {
        fields.method
    }

    /// One value per name, names as given; look up with ``value(forHTTPHeaderField:)`` (case-insensitive).
    package var headerFields: [String: String] {
        fields.headerFields
    }

    package var body: Data? {
        fields.body
    }

    package var timeoutInterval: TimeInterval {
        fields.timeoutInterval
    }

    /// The request as a `URLRequest`: the caller's own when there is one, otherwise built now.
    package var urlRequest: URLRequest {
        if let source = details?.fields.source {
            return source
        }
        // `URLRequest` has no initialiser without a URL; a task made with none fails validation before any hop.
        var request = URLRequest(url: TaskRequest.placeholderURL, timeoutInterval: timeoutInterval)
        request.url = url
        if method != "GET" {
            request.httpMethod = method
        }
        if !headerFields.isEmpty {
            request.allHTTPHeaderFields = headerFields
        }
        request.httpBody = body
        return request
    }

    private static let placeholderURL = URL(fileURLWithPath: "/")

    /// The caller's `URLRequest.cachePolicy`; `.useProtocolCachePolicy` for a request made without one (and for a
    /// decoded one: background sessions use no cache).
    package var cachePolicy: URLRequest.CachePolicy {
        details?.fields.source?.cachePolicy ?? .useProtocolCachePolicy
    }

    /// The value of the field `name`, compared case-insensitively.
    package func value(forHTTPHeaderField name: String) -> String? {
        let fields = headerFields
        if let direct = fields[name] {
            return direct
        }
        return fields.first { $0.key.caseInsensitiveEquals(name) }?.value
    }

    // MARK: Changes (a redirect)

    package mutating func setURL(_ newURL: URL?) {
        url = newURL
        if details?.fields.source != nil {
            change { $0.source?.url = newURL }
        }
    }

    package mutating func setMethod(_ newMethod: String) {
        change {
            $0.method = newMethod
            $0.source?.httpMethod = newMethod
        }
    }

    package mutating func removeBody() {
        change {
            $0.body = nil
            $0.source?.httpBody = nil
            $0.source?.httpBodyStream = nil
        }
    }

    /// Sets the field `name` to `value`, replacing any field of that name (case-insensitive).
    package mutating func setHeaderField(_ name: String, _ value: String) {
        removeHeaderField(name)
        change {
            $0.headerFields[name] = value
            $0.source?.setValue(value, forHTTPHeaderField: name)
        }
    }

    /// Removes every field named `name` (case-insensitive).
    package mutating func removeHeaderField(_ name: String) {
        for key in headerFields.keys where key.caseInsensitiveEquals(name) {
            change {
                $0.headerFields[key] = nil
                $0.source?.setValue(nil, forHTTPHeaderField: key)
            }
        }
    }

    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = fields
        body(&fields)
        details = Details(fields)
    }

    // MARK: Codable, Equatable

    private enum CodingKeys: String, CodingKey {
        case url, method, headers, body, timeout
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            url: try container.decode(URL.self, forKey: .url),
            method: try container.decodeIfPresent(String.self, forKey: .method) ?? "GET",
            headerFields: try container.decodeIfPresent([String: String].self, forKey: .headers) ?? [:],
            body: try container.decodeIfPresent(Data.self, forKey: .body),
            timeoutInterval: try container.decodeIfPresent(TimeInterval.self, forKey: .timeout)
                ?? TaskRequest.defaultTimeoutInterval
        )
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        guard let url else {
            throw EncodingError.invalidValue(
                self,
                EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "a request without a URL")
            )
        }
        try container.encode(url, forKey: .url)
        try container.encode(method, forKey: .method)
        if !headerFields.isEmpty {
            try container.encode(headerFields, forKey: .headers)
        }
        try container.encodeIfPresent(body, forKey: .body)
        try container.encode(timeoutInterval, forKey: .timeout)
    }

    package static func == (lhs: TaskRequest, rhs: TaskRequest) -> Bool {
        lhs.url == rhs.url && lhs.method == rhs.method && lhs.headerFields == rhs.headerFields
            && lhs.body == rhs.body && lhs.timeoutInterval == rhs.timeoutInterval
    }
}
