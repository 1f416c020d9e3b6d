import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's `URLCache` as the store of ``CacheEntry`` values: what a task's lookup reads and what its store
/// writes. The response goes in as an `HTTPURLResponse` (so that `cachedResponse(for:)` shows it to the app); the
/// field lines as received, the request and response dates and the `Vary` fields go in its `userInfo`.
extension URLCache {
    /// What the `HTTPURLResponse` does not keep, as one JSON string in the `userInfo` (strings survive
    /// swift-corelibs-foundation's archiving on disk as they are; numbers and dictionaries come back as Objective-C
    /// objects that do not bridge).
    private struct Details: Codable {
        var url: String
        var fieldLines: [ResponseHead.Field]
        var httpVersion: String
        var requestDate: Date
        var responseDate: Date
        var varyingFields: [String: String]
    }

    private static let detailsKey = "courier.entry"

    /// The largest body stored: 5 % of the larger capacity, as Apple's URLCache.
    var entryLimit: Int {
        max(memoryCapacity, diskCapacity) / 20
    }

    /// The stored response to a GET of `url`, or nil.
    func entry(for url: URL) -> CacheEntry? {
        guard let cached = cachedResponse(for: Self.key(for: url)),
            let response = cached.response as? HTTPURLResponse
        else {
            return nil
        }
        if let json = cached.userInfo?[Self.detailsKey] as? String,
            let details = try? JSONDecoder().decode(Details.self, from: Data(json.utf8))
        {
            guard details.url == Self.withoutFragment(url) else {
                return nil  // another URL with the same digest
            }
            let head = ResponseHead(
                status: response.statusCode,
                httpVersion: details.httpVersion,
                fieldLines: details.fieldLines
            )
            return CacheEntry(
                response: TaskResponse(url: url, head: head),
                body: cached.data,
                requestDate: details.requestDate,
                responseDate: details.responseDate,
                varyingFields: details.varyingFields
            )
        }
        // Stored by someone else (the app's own `storeCachedResponse`): its fields, dated by `Date`.
        let head = ResponseHead(
            status: response.statusCode,
            fieldLines: response.allHeaderFields.compactMap { name, value in
                (name as? String).map { ResponseHead.Field(name: $0, value: "\(value)") }
            }
        )
        let dated = head.value("Date").flatMap(HTTPDate.parse) ?? .distantPast
        return CacheEntry(
            response: TaskResponse(url: url, head: head),
            body: cached.data,
            requestDate: dated,
            responseDate: dated,
            varyingFields: [:]
        )
    }

    /// `entry` as the `CachedURLResponse` this cache would store, or nil when its response cannot be made.
    static func cachedResponse(for entry: CacheEntry) -> CachedURLResponse? {
        let head = entry.response.head
        let details = Details(
            url: Self.withoutFragment(entry.response.url),
            fieldLines: head.fieldLines,
            httpVersion: head.httpVersion,
            requestDate: entry.requestDate,
            responseDate: entry.responseDate,
            varyingFields: entry.varyingFields
        )
        guard let response = entry.response.httpResponse, let json = try? JSONEncoder().encode(details) else {
            return nil
        }
        let info: [AnyHashable: Any] = [detailsKey: String(decoding: json, as: UTF8.self)]
        return CachedURLResponse(response: response, data: entry.body, userInfo: info, storagePolicy: .allowed)
    }

    /// Stores `cached` as the response to a GET of `url`.
    func store(_ cached: CachedURLResponse, for url: URL) {
        storeCachedResponse(cached, for: Self.key(for: url))
    }

    /// Removes what is stored for `url`.
    func removeEntry(for url: URL) {
        removeCachedResponse(for: Self.key(for: url))
    }

    /// The request an entry for `url` is stored under: `url` itself when swift-corelibs-foundation's URLCache can
    /// keep it apart from every other, else a request for a digest of it. That URLCache names an entry by host,
    /// port and path only (so `/a?x=1` and `/a?x=2` would share one), and its file name is the Base64 of those, which
    /// holds a `/` (and the entry is never written) when the path has a `?` or a non-ASCII character in some
    /// positions. So a URL with a query or such a path is stored under `/courier-cache/` and 32 hex digits; the
    /// entry records its URL, and a lookup that finds another URL there finds nothing. The fragment never reaches a
    /// server and is dropped.
    static func key(for url: URL) -> URLRequest {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return URLRequest(url: url)
        }
        components.fragment = nil
        let plain = components.percentEncodedQuery == nil
            && components.path.utf8.allSatisfy { $0 < 0x7F && $0 != UInt8(ascii: "?") }
        if !plain {
            let text = withoutFragment(url)
            components.percentEncodedQuery = nil
            components.percentEncodedPath = "/courier-cache/" + digest(text)
        }
        return URLRequest(url: components.url ?? url)
    }

    private static func withoutFragment(_ url: URL) -> String {
        let text = url.absoluteString
        return text.firstIndex(of: "#").map { String(text[..<$0]) } ?? text
    }

    /// 128 bits of `text` as hex: two FNV-1a hashes with different offsets (a collision is caught by the URL the
    /// entry records).
    private static func digest(_ text: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in text.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return String(first, radix: 16) + "-" + String(second, radix: 16)
    }
}
