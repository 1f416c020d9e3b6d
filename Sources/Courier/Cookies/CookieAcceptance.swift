import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which cookies a response may set, as RFC 6265bis §5.7 says (the rules browsers apply), and which requests a stored
/// cookie goes to. Pure: the caller gives the response's URL and the cookies already stored.
///
/// Refused: a `Secure` cookie (or one named `__Secure-…` / `__Host-…`) from a response that did not come over https; a
/// `__Host-` cookie with a `Domain` attribute or a path other than `/`; a `Domain` attribute that the host is not
/// in, that is a public suffix (``PublicSuffixList``) other than the host itself, or that is set from an IP address
/// (an address is not a domain: only the address itself, host-only); a cookie from plain http that would replace or
/// shadow a `Secure` one of the same name ("leave secure cookies alone").
enum CookieAcceptance {
    /// The cookie to store for `cookie`, set by a response from `url` (host-only where its domain is the host), or nil
    /// when it is refused.
    static func accepted(_ cookie: HTTPCookie, from url: URL, stored: [HTTPCookie]) -> HTTPCookie? {
        guard let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        let secureOrigin = isSecure(url)
        let name = cookie.name
        if cookie.isSecure || name.hasPrefix("__Secure-") || name.hasPrefix("__Host-") {
            guard cookie.isSecure, secureOrigin else {
                return nil
            }
        }
        var domain = cookie.domain.lowercased()
        let hostOnly = !domain.hasPrefix(".")
        if domain.hasPrefix(".") {
            domain.removeFirst()
        }
        var hostOnlyStored = hostOnly
        if hostOnly {
            guard domain == host else {
                return nil
            }
        } else if domain == host {
            // `Domain` naming the host itself: for it and its subdomains, unless it is an address or a public suffix
            // (then for the host alone).
            hostOnlyStored = isAddress(host) || PublicSuffixList.contains(domain)
        } else {
            guard !isAddress(host), host.hasSuffix("." + domain), !PublicSuffixList.contains(domain) else {
                return nil
            }
        }
        if name.hasPrefix("__Host-"), !hostOnlyStored || cookie.path != "/" {
            return nil
        }
        if !cookie.isSecure && !secureOrigin {
            let shadowsSecure = stored.contains { existing in
                existing.isSecure && existing.name == name
                    && (domainMatches(existing.domain, host: domain)
                        || domainMatches(cookie.domain, host: bare(existing.domain)))
                    && pathMatches(existing.path, requestPath: cookie.path)
            }
            if shadowsSecure {
                return nil
            }
        }
        guard hostOnlyStored && cookie.domain != domain else {
            return cookie
        }
        // Stored without the leading dot: sent to this host only.
        var properties = cookie.properties ?? [:]
        properties[.domain] = domain
        return HTTPCookie(properties: properties) ?? cookie
    }

    /// Whether a request to `url` goes over a secure channel (https, wss).
    static func isSecure(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        return scheme == "https" || scheme == "wss"
    }

    /// Whether `host` is an IPv4 or IPv6 address rather than a name.
    static func isAddress(_ host: String) -> Bool {
        var bare = host
        if bare.hasPrefix("["), bare.hasSuffix("]") {
            bare = String(bare.dropFirst().dropLast())
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// Whether a cookie of `cookieDomain` (a leading dot: that domain and its subdomains; none: that host only) goes
    /// to `host`. An address matches only itself.
    static func domainMatches(_ cookieDomain: String, host: String) -> Bool {
        var domain = cookieDomain.lowercased()
        guard domain.hasPrefix(".") else {
            return host == domain
        }
        domain.removeFirst()
        return host == domain || (!isAddress(host) && host.hasSuffix("." + domain))
    }

    /// Whether a cookie of `cookiePath` goes with a request for `requestPath` (RFC 6265bis §5.1.4).
    static func pathMatches(_ cookiePath: String, requestPath: String) -> Bool {
        if cookiePath.isEmpty || cookiePath == "/" || requestPath == cookiePath {
            return true
        }
        guard requestPath.hasPrefix(cookiePath) else {
            return false
        }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).hasPrefix("/")
    }

    private static func bare(_ domain: String) -> String {
        domain.hasPrefix(".") ? String(domain.dropFirst()).lowercased() : domain.lowercased()
    }
}
