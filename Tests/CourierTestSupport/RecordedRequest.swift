/// One request the ``TestServer`` received completely (head and body), in arrival order.
public struct RecordedRequest: Sendable {
    /// The method, e.g. `GET`.
    public let method: String

    /// The request target as sent, path and query, e.g. `/bytes/16?seed=2`.
    public let uri: String

    /// The header fields in the order received, names as sent (HTTP/2 sends them lower-cased).
    public let headers: [(String, String)]

    /// How many body bytes arrived.
    public let bodyLength: Int

    /// `"1.0"`, `"1.1"` or `"2"`.
    public let httpVersion: String

    /// Creates a record.
    public init(method: String, uri: String, headers: [(String, String)], bodyLength: Int, httpVersion: String) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.bodyLength = bodyLength
        self.httpVersion = httpVersion
    }

    /// The path part of ``uri`` (before any `?`).
    public var path: String {
        if let index = uri.firstIndex(of: "?") {
            return String(uri[..<index])
        }
        return uri
    }

    /// The first value of the header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.0.lowercased() == lowered }?.1
    }

    /// All values of the header `name`, compared case-insensitively.
    public func headerValues(_ name: String) -> [String] {
        let lowered = name.lowercased()
        return headers.filter { $0.0.lowercased() == lowered }.map(\.1)
    }
}
