import CourierConcurrency
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A cookie jar, in memory or kept in a Netscape cookie file (the format curl's `-b`/`-c`, wget and aria2 read and
/// write). Courier keeps cookies on the Swift side; the engine never sees them.
///
/// ``shared`` is the process-wide jar of ``SessionConfiguration/default`` (in memory); each
/// ``SessionConfiguration/ephemeral`` configuration gets a private one. ``init(persistingTo:)`` makes a jar that
/// outlives the process. All methods are thread-safe.
public final class CookieStorage: Sendable {
    /// The process-wide jar used by `.default` configurations.
    public static let shared = CookieStorage()

    private let state = LockedValue<[CookieKey: HTTPCookie]>([:])
    /// The jar's file, written after each change (``init(persistingTo:)``); nil in memory.
    private let file: KeptFile?

    private struct CookieKey: Hashable {
        var name: String
        var domain: String
        var path: String
    }

    /// An empty jar in memory.
    public init() {
        file = nil
    }

    /// A jar kept in the Netscape cookie file at `url`: the cookies in it are read now (a missing file is an empty
    /// jar), and the file is written again (atomically, mode 0600) after every change, session cookies included as
    /// curl writes them. Throws when the file exists and cannot be read.
    public init(persistingTo url: URL) throws {
        file = KeptFile(url, makesDirectory: false)
        for cookie in NetscapeCookieFile.cookies(in: try file?.read() ?? "") {
            setCookieInMemory(cookie)
        }
    }

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
        setCookieInMemory(cookie)
        save()
    }

    private func setCookieInMemory(_ cookie: HTTPCookie) {
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

    /// Adds the cookies of the Netscape cookie file at `url` (curl's `-b FILE`), replacing those of the same name,
    /// domain and path. Throws when it cannot be read.
    public func readNetscapeFile(at url: URL) throws {
        for cookie in NetscapeCookieFile.cookies(in: try String(contentsOf: url, encoding: .utf8)) {
            setCookie(cookie)
        }
    }

    /// Returns once the jar's file (``init(persistingTo:)``) holds every change made before the call; at once for a jar
    /// in memory. Call it before the process exits.
    public func synchronize() {
        file?.flush()
    }

    /// Writes every cookie to `url` as a Netscape cookie file (curl's `-c FILE`), atomically, mode 0600.
    public func writeNetscapeFile(to url: URL) throws {
        try KeptFile.write(NetscapeCookieFile.text(of: cookies), to: url)
    }

    /// Writes the jar's file (``init(persistingTo:)``) with the cookies as they are when the write runs.
    private func save() {
        file?.save { [self] in NetscapeCookieFile.text(of: cookies) }
    }

    /// Stores cookies a response to `url` set, each only if a response from `url` may set it (RFC 6265bis: no
    /// `Secure` cookie from plain http, no domain the host is not in, no public suffix, no domain of an IP address);
    /// with no URL, each is stored as it is.
    public func setCookies(_ cookies: [HTTPCookie], for url: URL?) {
        for cookie in cookies {
            guard let url else {
                setCookie(cookie)
                continue
            }
            if let accepted = CookieAcceptance.accepted(cookie, from: url, stored: self.cookies) {
                setCookie(accepted)
            }
        }
    }

    /// Removes one cookie.
    public func deleteCookie(_ cookie: HTTPCookie) {
        let key = CookieKey(name: cookie.name, domain: cookie.domain.lowercased(), path: cookie.path)
        state.withLock { _ = $0.removeValue(forKey: key) }
        save()
    }

    /// Removes every cookie.
    public func removeAll() {
        state.withLock { $0.removeAll() }
        save()
    }

    /// The cookies to send with a request to `url`: domain, path, `Secure` and expiry are checked.
    public func cookies(for url: URL) -> [HTTPCookie] {
        guard let host = url.host?.lowercased() else {
            return []
        }
        let path = url.path.isEmpty ? "/" : url.path
        let isSecure = CookieAcceptance.isSecure(url)
        let now = Date()
        return state.withLock { jar in
            jar.values.filter { cookie in
                !cookie.isExpired(at: now) && (!cookie.isSecure || isSecure)
                    && CookieAcceptance.domainMatches(cookie.domain, host: host)
                    && CookieAcceptance.pathMatches(cookie.path, requestPath: path)
            }
        }.sorted { $0.path.count > $1.path.count }
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
    /// Parses `Set-Cookie` values of a response and stores the ones the policy and ``CookieAcceptance`` accept.
    func store(setCookieValues: [String], from url: URL, policy: HTTPCookie.AcceptPolicy) {
        guard !setCookieValues.isEmpty, policy != .never, let host = url.host?.lowercased() else {
            return
        }
        for value in setCookieValues {
            let parsed = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": value], for: url)
            for cookie in parsed {
                guard let accepted = CookieAcceptance.accepted(cookie, from: url, stored: cookies) else {
                    continue
                }
                if policy == .onlyFromMainDocumentDomain,
                    !CookieAcceptance.domainMatches(
                        accepted.domain.hasPrefix(".") ? accepted.domain : "." + accepted.domain,
                        host: host
                    )
                {
                    continue
                }
                setCookie(accepted)
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
