import NIOCore
import NIOHTTP1

/// A complete request as the routes see it: the head, what was kept of the body, and the parsed target.
struct ReceivedRequest {
    let head: HTTPRequestHead

    /// The body, for the routes that answer it back (`/echo`); empty otherwise.
    let body: ByteBuffer

    /// How many body bytes arrived.
    let bodyLength: Int

    /// The SHA-256 of the body as lower-case hex, for `/upload`; nil otherwise.
    let bodySHA256: String?

    /// The path, percent-decoded segment by segment, split on `/` (the leading empty segment dropped).
    let pathSegments: [String]

    /// The query pairs in order, percent-decoded.
    let query: [(name: String, value: String)]

    /// The raw query (after `?`), or "".
    let rawQuery: String

    init(head: HTTPRequestHead, body: ByteBuffer, bodyLength: Int, bodySHA256: String?) {
        self.head = head
        self.body = body
        self.bodyLength = bodyLength
        self.bodySHA256 = bodySHA256
        let target = Self.splitTarget(Self.originForm(head.uri))
        self.pathSegments = target.path
            .split(separator: "/", omittingEmptySubsequences: false)
            .dropFirst()
            .map { Self.percentDecode(String($0)) }
        self.rawQuery = target.query
        self.query = Self.parseQuery(target.query)
    }

    var isHTTP2: Bool { head.version.major == 2 }

    /// The request was sent to a proxy: its target is in absolute form (`http://host:port/path`).
    var isProxied: Bool { head.uri.hasPrefix("http://") || head.uri.hasPrefix("https://") }

    /// `/path?query` of a target in absolute form; any other target as it is.
    static func originForm(_ uri: String) -> String {
        guard let scheme = uri.range(of: "://"), uri.hasPrefix("http") else {
            return uri
        }
        let rest = uri[scheme.upperBound...]
        return rest.firstIndex(where: { $0 == "/" || $0 == "?" }).map { String(rest[$0...]) } ?? "/"
    }

    var isHEAD: Bool { head.method == .HEAD }

    /// `"1.0"`, `"1.1"` or `"2"`.
    var httpVersionString: String {
        head.version.major == 2 ? "2" : "\(head.version.major).\(head.version.minor)"
    }

    /// The last value of query parameter `name`.
    func queryValue(_ name: String) -> String? {
        query.last { $0.name == name }?.value
    }

    /// The query parameter `name` as an integer, nil when absent or not a number.
    func queryInt(_ name: String) -> Int? {
        queryValue(name).flatMap { Int($0) }
    }

    /// Whether query parameter `name` is `1` or `true`.
    func queryFlag(_ name: String) -> Bool {
        guard let value = queryValue(name) else { return false }
        return value == "1" || value.lowercased() == "true"
    }

    /// The first value of header `name`.
    func header(_ name: String) -> String? {
        head.headers.first(name: name)
    }

    /// The request as recorded for ``TestServer/requests``.
    var recorded: RecordedRequest {
        RecordedRequest(
            method: head.method.rawValue,
            uri: head.uri,
            headers: head.headers.map { ($0.name, $0.value) },
            bodyLength: bodyLength,
            httpVersion: httpVersionString
        )
    }

    static func splitTarget(_ uri: String) -> (path: String, query: String) {
        guard let index = uri.firstIndex(of: "?") else { return (uri, "") }
        return (String(uri[..<index]), String(uri[uri.index(after: index)...]))
    }

    static func parseQuery(_ query: String) -> [(name: String, value: String)] {
        query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let equals = pair.firstIndex(of: "=") {
                return (
                    percentDecode(String(pair[..<equals])),
                    percentDecode(String(pair[pair.index(after: equals)...]))
                )
            }
            return (percentDecode(String(pair)), "")
        }
    }

    /// Decodes `%XX` escapes; invalid escapes are kept as they are. `+` stays `+`.
    static func percentDecode(_ string: String) -> String {
        guard string.contains("%") else { return string }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count)
        var iterator = Array(string.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
                let high = hexValue(iterator[iterator.startIndex]),
                let low = hexValue(iterator[iterator.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
