import Foundation

/// The directives of a `Cache-Control` field (RFC 9111 §5.2) that a private cache acts on, from a request or a
/// response. Unknown directives are ignored, as the RFC requires; `s-maxage`, `proxy-revalidate` and `public` are
/// for shared caches and change nothing here but what a request with credentials may store.
struct CacheControl: Sendable, Equatable {
    var noStore = false
    /// `no-cache`: a stored response must be revalidated before it is used (a field list, `no-cache="a, b"`, is
    /// treated as the whole response, which the RFC allows).
    var noCache = false
    var maxAge: TimeInterval?
    /// A request's `max-stale`: `.infinity` when given without a value.
    var maxStale: TimeInterval?
    var minFresh: TimeInterval?
    var mustRevalidate = false
    var onlyIfCached = false
    /// `public` or `s-maxage`: a response to a request with credentials may be stored (RFC 9111 §3.5).
    var allowsSharing = false

    /// The directives of `value` (the field's lines joined with ", "); nil gives none.
    init(_ value: String?) {
        guard let value else {
            return
        }
        for directive in Self.directives(value) {
            let seconds = directive.argument.flatMap { TimeInterval($0) }.map { max(0, $0) }
            switch directive.name {
            case "no-store": noStore = true
            case "no-cache": noCache = true
            // A malformed delta-seconds must not make a response fresh: treat it as 0 (RFC 9111 §4.2.1).
            case "max-age": maxAge = seconds ?? 0
            case "max-stale": maxStale = directive.argument == nil ? .infinity : seconds
            case "min-fresh": minFresh = seconds
            case "must-revalidate": mustRevalidate = true
            case "only-if-cached": onlyIfCached = true
            case "public", "s-maxage": allowsSharing = true
            default: break
            }
        }
    }

    /// `name[=argument]` items split at commas outside quoted strings; names lower-cased, quotes removed.
    private static func directives(_ value: String) -> [(name: String, argument: String?)] {
        var items: [String] = []
        var current = ""
        var quoted = false
        for character in value {
            if character == "\"" {
                quoted.toggle()
            }
            if character == "," && !quoted {
                items.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        items.append(current)
        return items.compactMap { item in
            let parts = item.split(separator: "=", maxSplits: 1)
            guard let name = parts.first?.trimmingCharacters(in: .whitespaces).lowercased(), !name.isEmpty else {
                return nil
            }
            let argument = parts.count > 1
                ? parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                : nil
            return (name, argument)
        }
    }
}
