import CourierConcurrency
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// An in-memory cookie jar. Courier keeps cookies on the Swift side; the engine never sees them.
///
/// ``shared`` is the process-wide jar of ``SessionConfiguration/default``; each ``SessionConfiguration/ephemeral``
/// configuration gets a private one. All methods are thread-safe.
public final class CookieStorage: Sendable {
    /// The process-wide jar used by `.default` configurations.
    public static let shared = CookieStorage()

    private let state = LockedValue<[CookieKey: HTTPCookie]>([:])

    private struct CookieKey: Hashable {
        var name: String
        var domain: String
        var path: String
    }

    public init() {}

    /// Every cookie in the jar, expired ones removed.
    public var cookies: [HTTPCookie] {
        let now = Date()
        return state.withLock { jar in
            jar = jar.filter { !$0.value.isExpired(at: now) }
            return Array(jar.values)
        }
    }

    /// Stores one cookie, replacing one with the same name, domain and path. An expired cookie deletes it.
    public func setCookie(_ cookie: HTTPCookie) {
        let key = CookieKey(name: cookie.name, domain: cookie.domain.lowercased(), path: cookie.path)
        let expired = cookie.isExpired(at: Date())
        state.withLock { jar in
            if expired {
                jar[key] = nil
            } else {
                jar[key] = cookie
            }
        }
    }

    /// Stores cookies a response to `url` set.
    public func setCookies(_ cookies: [HTTPCookie], for url: URL?) {
        for cookie in cookies {
            setCookie(cookie)
        }
    }

    /// Removes one cookie.
    public func deleteCookie(_ cookie: HTTPCookie) {
        let key = CookieKey(name: cookie.name, domain: cookie.domain.lowercased(), path: cookie.path)
        state.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// Removes every cookie.
    public func removeAll() {
        state.withLock { $0.removeAll() }
    }

    /// The cookies to send with a request to `url`: domain, path, `Secure` and expiry are checked.
    public func cookies(for url: URL) -> [HTTPCookie] {
        guard let host = url.host?.lowercased() else {
            return []
        }
        let path = url.path.isEmpty ? "/" : url.path
        let isSecure = url.scheme?.lowercased() == "https"
        let now = Date()
        return state.withLock { jar in
            jar.values.filter { cookie in
                !cookie.isExpired(at: now) && (!cookie.isSecure || isSecure)
                    && CookieStorage.domainMatches(cookie.domain, host: host)
                    && CookieStorage.pathMatches(cookie.path, requestPath: path)
            }
        }.sorted { $0.path.count > $1.path.count }
    }

    static func domainMatches(_ cookieDomain: String, host: String) -> Bool {
        var domain = cookieDomain.lowercased()
        if domain.hasPrefix(".") {
            domain.removeFirst()
            return host == domain || host.hasSuffix("." + domain)
        }
        return host == domain
    }

    static func pathMatches(_ cookiePath: String, requestPath: String) -> Bool {
        if cookiePath.isEmpty || cookiePath == "/" || requestPath == cookiePath {
            return true
        }
        guard requestPath.hasPrefix(cookiePath) else {
            return false
        }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).hasPrefix("/")
    }
}

extension HTTPCookie {
    fileprivate func isExpired(at date: Date) -> Bool {
        if let expiresDate {
            return expiresDate <= date
        }
        return false
    }
}

extension CookieStorage {
    /// Parses `Set-Cookie` values of a response and stores the ones the policy accepts.
    func store(setCookieValues: [String], from url: URL, policy: HTTPCookie.AcceptPolicy) {
        guard !setCookieValues.isEmpty, policy != .never, let host = url.host?.lowercased() else {
            return
        }
        for value in setCookieValues {
            let parsed = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": value], for: url)
            for cookie in parsed {
                // A cookie may only be set for the response's host or a parent domain of it.
                guard
                    CookieStorage.domainMatches(cookie.domain, host: host)
                        || CookieStorage.domainMatches("." + cookie.domain.trimmingCharacters(in: ["."]), host: host)
                else {
                    continue
                }
                if policy == .onlyFromMainDocumentDomain,
                    !CookieStorage.domainMatches(
                        cookie.domain.hasPrefix(".") ? cookie.domain : "." + cookie.domain,
                        host: host
                    )
                {
                    continue
                }
                setCookie(cookie)
            }
        }
    }

    /// The `Cookie` header value for a request to `url`, or nil when there is none.
    func cookieHeader(for url: URL) -> String? {
        if state.withLock({ $0.isEmpty }) {
            return nil
        }
        let cookies = cookies(for: url)
        guard !cookies.isEmpty else {
            return nil
        }
        return cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }
}
