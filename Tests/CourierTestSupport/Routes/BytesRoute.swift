import NIOCore
import NIOHTTP1

/// `GET/HEAD /bytes/N?seed=S`: deterministic bytes with validators, ranges and wire faults.
enum BytesRoute {
    /// The fixed `Last-Modified` of every `/bytes` body.
    static let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        guard request.head.method == .GET || request.head.method == .HEAD else {
            return Router.methodNotAllowed(request, allowed: "GET, HEAD")
        }
        guard let count = Int(request.pathSegments[1]), count >= 0 else {
            return Router.badRequest("/bytes/N needs a non-negative integer N")
        }
        let seed = request.queryInt("seed") ?? 0
        let validators = !request.queryFlag("noValidator")
        let etag = validators ? makeETag(request, count: count, seed: seed) : nil

        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Accept-Ranges", value: "bytes")
        if let etag {
            headers.add(name: "ETag", value: etag)
        }
        if validators {
            headers.add(name: "Last-Modified", value: lastModified)
        }
        DigestFields.add(to: &headers, request, count: count, seed: seed)

        var plan: ResponsePlan
        if let etag, let ifNoneMatch = request.header("If-None-Match"), matchesWeakly(ifNoneMatch, etag: etag) {
            plan = ResponsePlan(status: .notModified, headers: headers)
        } else if !request.queryFlag("ignoreRange"),
            let rangeHeader = request.header("Range"),
            let range = ByteRange(parsing: rangeHeader),
            ifRangeAllows(request.header("If-Range"), etag: etag, validators: validators)
        {
            if let bounds = range.resolve(length: count) {
                headers.add(name: "Content-Range", value: "bytes \(bounds.lowerBound)-\(bounds.upperBound - 1)/\(count)")
                plan = ResponsePlan(
                    status: .partialContent,
                    headers: headers,
                    body: .generated(seed: seed, offset: bounds.lowerBound, count: bounds.count)
                )
            } else {
                headers.add(name: "Content-Range", value: "bytes */\(count)")
                plan = ResponsePlan(status: .rangeNotSatisfiable, headers: headers)
            }
        } else {
            plan = ResponsePlan(status: .ok, headers: headers, body: .generated(seed: seed, offset: 0, count: count))
        }
        plan.faults = faults(request)
        return plan
    }

    /// The ETag: `"N-S"`, or `etag=X` as `"X"`; `weak=1` makes it `W/"…"`.
    static func makeETag(_ request: ReceivedRequest, count: Int, seed: Int) -> String {
        var tag = request.queryValue("etag") ?? "\(count)-\(seed)"
        if !tag.hasPrefix("\"") && !tag.hasPrefix("W/") {
            tag = "\"\(tag)\""
        }
        if request.queryFlag("weak") && !tag.hasPrefix("W/") {
            tag = "W/" + tag
        }
        return tag
    }

    /// If-None-Match uses the weak comparison (RFC 9110 13.1.2); `*` matches anything.
    static func matchesWeakly(_ header: String, etag: String) -> Bool {
        let current = stripWeakness(etag)
        return header.split(separator: ",").contains { candidate in
            let candidate = candidate.trimmed(of: " \t")
            return candidate == "*" || stripWeakness(candidate) == current
        }
    }

    /// If-Range (RFC 9110 13.1.5): absent allows the range; an entity tag must match strongly
    /// (a weak current ETag never matches); anything else is compared with Last-Modified exactly.
    static func ifRangeAllows(_ ifRange: String?, etag: String?, validators: Bool) -> Bool {
        guard let ifRange = ifRange?.trimmed(of: " \t") else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
            guard let etag, !etag.hasPrefix("W/"), !ifRange.hasPrefix("W/") else { return false }
            return ifRange == etag
        }
        return validators && ifRange == lastModified
    }

    private static func stripWeakness(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }

    /// The wire faults from the query: delay (rangeDelay: for a request with a Range only), stall, trickle +
    /// interval, cut, reset, rst + rstCode, goaway + goawayCode, lie, chunked.
    static func faults(_ request: ReceivedRequest) -> ResponsePlan.Faults {
        var faults = ResponsePlan.Faults()
        faults.delay = Router.delay(request)
        if request.header("Range") != nil, let rangeDelay = request.queryInt("rangeDelay"), rangeDelay > 0 {
            faults.delay = .milliseconds(Int64(rangeDelay))
        }
        faults.stall = request.queryInt("stall").flatMap { $0 > 0 ? .milliseconds(Int64($0)) : nil }
        if let bytes = request.queryInt("trickle"), bytes > 0 {
            faults.trickle = (bytes, .milliseconds(Int64(max(0, request.queryInt("interval") ?? 100))))
        }
        faults.cut = request.queryInt("cut")
        faults.hold = request.queryInt("hold")
        faults.reset = request.queryInt("reset")
        if let after = request.queryInt("rst") {
            faults.streamReset = (after, UInt32(clamping: request.queryInt("rstCode") ?? 2))
        }
        if let after = request.queryInt("goaway") {
            faults.goAway = (after, UInt32(clamping: request.queryInt("goawayCode") ?? 0))
        }
        faults.lie = request.queryInt("lie")
        faults.chunked = request.queryFlag("chunked")
        return faults
    }
}
