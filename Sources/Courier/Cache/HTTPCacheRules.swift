import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// RFC 9111 for a private cache, as pure functions of a request, a stored entry and the time: what may be stored,
/// how long it is fresh, and what a task does with a lookup under each `URLRequest.CachePolicy`.
enum HTTPCacheRules {
    /// How a task uses the cache: a request's `cachePolicy`, or the session's `requestCachePolicy` when the request
    /// says `.useProtocolCachePolicy`.
    enum Mode: UInt8, Codable, Sendable, Equatable {
        /// RFC 9111: serve a fresh entry, revalidate a stale one that has a validator, else load.
        case useProtocol
        /// Load; the response is still stored.
        case reloadIgnoringCache
        /// Revalidate any entry that has a validator.
        case reloadRevalidating
        /// Serve any entry, however stale; load when there is none.
        case returnCacheElseLoad
        /// Serve any entry; fail with `resourceUnavailable` when there is none.
        case returnCacheDontLoad

        init(_ policy: URLRequest.CachePolicy) {
            switch policy {
            case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData: self = .reloadIgnoringCache
            case .reloadRevalidatingCacheData: self = .reloadRevalidating
            case .returnCacheDataElseLoad: self = .returnCacheElseLoad
            case .returnCacheDataDontLoad: self = .returnCacheDontLoad
            default: self = .useProtocol
            }
        }
    }

    /// What a task does after its lookup.
    enum Decision: Sendable, Equatable {
        case load
        case serve(CacheEntry)
        /// Send the request with these conditional fields; a 304 serves the entry.
        case revalidate(CacheEntry, conditions: [String: String])
        case unavailable
    }

    /// Status codes whose meaning this cache understands and that may be stored (RFC 9110 §15.1's heuristically
    /// cacheable codes without 206, which Courier never stores).
    static let storableStatuses: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The heuristic freshness is 10 % of the time since `Last-Modified` (RFC 9111 §4.2.2), capped at a week.
    static let heuristicFraction = 0.1
    static let heuristicCap: TimeInterval = 7 * 24 * 3600

    /// Whether the task looks in the cache before it sends `request`: a GET whose caller set no conditional field
    /// of its own (a caller's `If-None-Match` wants the server's 304, not Courier's).
    static func looksUp(_ request: TaskRequest, mode: Mode) -> Bool {
        guard mode != .reloadIgnoringCache, request.method.uppercased() == "GET" else {
            return false
        }
        return !["If-None-Match", "If-Modified-Since", "If-Range", "If-Match", "If-Unmodified-Since", "Range"]
            .contains { request.value(forHTTPHeaderField: $0) != nil }
    }

    /// Whether `response` to `request` may be stored (RFC 9111 §3): a GET, an understood status, no `no-store` on
    /// either side, no `Vary: *`, a request without credentials (unless the response allows it), and something to
    /// judge freshness or revalidate by.
    static func mayStore(_ response: ResponseHead, for request: TaskRequest) -> Bool {
        guard request.method.uppercased() == "GET", storableStatuses.contains(response.status) else {
            return false
        }
        let requestControl = CacheControl(request.value(forHTTPHeaderField: "Cache-Control"))
        let control = CacheControl(response.value("Cache-Control"))
        guard !requestControl.noStore, !control.noStore, response.value("Vary")?.contains("*") != true else {
            return false
        }
        if request.value(forHTTPHeaderField: "Authorization") != nil, !control.mustRevalidate, !control.allowsSharing {
            return false
        }
        return control.maxAge != nil || response.value("Expires") != nil || response.value("ETag") != nil
            || response.value("Last-Modified") != nil
    }

    /// The request fields `response`'s `Vary` names, as the entry records them.
    static func varyingFields(of response: ResponseHead, for request: TaskRequest) -> [String: String] {
        guard let vary = response.value("Vary") else {
            return [:]
        }
        var fields: [String: String] = [:]
        for name in vary.split(separator: ",") {
            let name = name.trimmingCharacters(in: .whitespaces).lowercased()
            if !name.isEmpty {
                fields[name] = request.value(forHTTPHeaderField: name) ?? ""
            }
        }
        return fields
    }

    /// How long the response stays fresh after it was generated (RFC 9111 §4.2.1): `max-age`, else `Expires` less
    /// `Date`, else the heuristic when `Last-Modified` is given, else 0.
    static func freshnessLifetime(of entry: CacheEntry) -> TimeInterval {
        let head = entry.response.head
        let control = CacheControl(head.value("Cache-Control"))
        if let maxAge = control.maxAge {
            return maxAge
        }
        let date = head.value("Date").flatMap(HTTPDate.parse) ?? entry.responseDate
        if let expires = head.value("Expires") {
            // An invalid Expires ("0") means already expired.
            return HTTPDate.parse(expires).map { max(0, $0.timeIntervalSince(date)) } ?? 0
        }
        if let modified = head.value("Last-Modified").flatMap(HTTPDate.parse) {
            return min(heuristicCap, max(0, date.timeIntervalSince(modified)) * heuristicFraction)
        }
        return 0
    }

    /// The entry's age at `now` (RFC 9111 §4.2.3).
    static func currentAge(of entry: CacheEntry, at now: Date) -> TimeInterval {
        let head = entry.response.head
        let ageValue = head.value("Age").flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let date = head.value("Date").flatMap(HTTPDate.parse) ?? entry.responseDate
        let apparentAge = max(0, entry.responseDate.timeIntervalSince(date))
        let responseDelay = max(0, entry.responseDate.timeIntervalSince(entry.requestDate))
        let initialAge = max(apparentAge, max(0, ageValue) + responseDelay)
        return initialAge + max(0, now.timeIntervalSince(entry.responseDate))
    }

    /// The conditional fields that revalidate `entry`: `If-None-Match` from its `ETag`, `If-Modified-Since` from its
    /// `Last-Modified`; empty when it has neither.
    static func conditions(for entry: CacheEntry) -> [String: String] {
        var fields: [String: String] = [:]
        if let etag = entry.response.head.value("ETag") {
            fields["If-None-Match"] = etag
        }
        if let modified = entry.response.head.value("Last-Modified") {
            fields["If-Modified-Since"] = modified
        }
        return fields
    }

    /// What a task does with `entry` (nil: none found) for `request` under `mode` at `now`.
    static func decision(for request: TaskRequest, entry: CacheEntry?, mode: Mode, at now: Date) -> Decision {
        let requestControl = CacheControl(request.value(forHTTPHeaderField: "Cache-Control"))
        guard let entry, varyMatches(entry, request) else {
            return mode == .returnCacheDontLoad || requestControl.onlyIfCached ? .unavailable : .load
        }
        let conditions = conditions(for: entry)
        let revalidateOrLoad: Decision = conditions.isEmpty ? .load : .revalidate(entry, conditions: conditions)
        switch mode {
        case .reloadIgnoringCache:
            return .load
        case .reloadRevalidating:
            return revalidateOrLoad
        case .returnCacheElseLoad, .returnCacheDontLoad:
            return .serve(entry)
        case .useProtocol:
            break
        }
        if requestControl.onlyIfCached {
            return .serve(entry)
        }
        let control = CacheControl(entry.response.head.value("Cache-Control"))
        let pragmaNoCache = request.value(forHTTPHeaderField: "Pragma")?.lowercased().contains("no-cache") == true
        if control.noCache || requestControl.noCache || pragmaNoCache {
            return revalidateOrLoad
        }
        let age = currentAge(of: entry, at: now)
        var lifetime = freshnessLifetime(of: entry)
        if let maxAge = requestControl.maxAge {
            lifetime = min(lifetime, maxAge)
        }
        let needed = age + (requestControl.minFresh ?? 0)
        if needed < lifetime {
            return .serve(entry)
        }
        if let maxStale = requestControl.maxStale, !control.mustRevalidate, needed - lifetime <= maxStale {
            return .serve(entry)
        }
        return revalidateOrLoad
    }

    /// The stored head refreshed by a 304's fields (RFC 9111 §3.2): each field the 304 sends replaces the stored
    /// ones of its name, except those that describe the stored body's framing.
    static func refreshed(_ stored: ResponseHead, with notModified: ResponseHead) -> ResponseHead {
        let kept: Set<String> = ["content-length", "content-encoding", "transfer-encoding", "content-range"]
        let replaced = Set(notModified.fieldLines.map { $0.name.lowercased() }).subtracting(kept)
        var head = stored
        head.fieldLines.removeAll { replaced.contains($0.name.lowercased()) }
        head.fieldLines += notModified.fieldLines.filter { replaced.contains($0.name.lowercased()) }
        return head
    }

    /// Whether a method's successful response invalidates what is stored for its URL (RFC 9111 §4.4).
    static func invalidates(method: String, status: Int) -> Bool {
        !["GET", "HEAD", "OPTIONS", "TRACE"].contains(method.uppercased()) && (200...399).contains(status)
    }

    private static func varyMatches(_ entry: CacheEntry, _ request: TaskRequest) -> Bool {
        entry.varyingFields.allSatisfy { name, value in (request.value(forHTTPHeaderField: name) ?? "") == value }
    }
}
