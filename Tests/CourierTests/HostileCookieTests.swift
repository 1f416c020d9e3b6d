import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cookie jar against servers that try to set what they must not (RFC 6265bis §5.7): each rule through real
/// responses of the test server, on 127.0.0.1 and 127.0.0.2, directly and as a proxy for names under `.co.uk`.
@Suite("Cookies: what a server may set", .timeLimit(.minutes(1)))
struct HostileCookieTests {
    /// `/cookies/raw` answering with `values` as `Set-Cookie` fields.
    static func setting(_ values: [String], on server: TestServer) -> URL {
        var components = URLComponents(url: server.url("/cookies/raw"), resolvingAgainstBaseURL: false)!
        components.queryItems = values.map { URLQueryItem(name: "v", value: $0) }
        return components.url!
    }

    static func sent(by session: Session, to url: URL) async throws -> [String: Any] {
        let (data, _) = try await session.data(from: url)
        return jsonObject(data)
    }

    @Test("plain http cannot set a Secure cookie (or a __Secure-/__Host- one) for the https site of its host")
    func secureOnlyFromSecureOrigins() async throws {
        var tls = TestServer.Configuration()
        tls.tls = true
        var plain = TestServer.Configuration()
        plain.plainInEveryPass = true
        try await withServer(plain) { http in
            try await withServer(tls) { https in
                var configuration = testConfiguration()
                configuration.trustedCertificateAuthorities = .pem(try #require(https.certificateAuthority?.pem))
                let session = Session(configuration: configuration)
                defer { session.invalidateAndCancel() }
                _ = try await session.data(
                    from: Self.setting(
                        ["planted=1; Path=/; Secure", "__Secure-p=1; Path=/; Secure", "__Host-p=1; Path=/", "plain=1"],
                        on: http
                    )
                )
                let overTLS = try await Self.sent(by: session, to: https.url("/cookies"))
                #expect(overTLS.keys.sorted() == ["plain"], "\(overTLS)")
                // From https: stored, and sent over https only.
                _ = try await session.data(
                    from: Self.setting(["real=1; Path=/; Secure", "__Host-h=1; Path=/; Secure"], on: https)
                )
                #expect(try await Self.sent(by: session, to: https.url("/cookies")).keys.sorted()
                    == ["__Host-h", "plain", "real"])
                #expect(try await Self.sent(by: session, to: http.url("/cookies")).keys.sorted() == ["plain"])
                // Plain http cannot replace or shadow the Secure cookie.
                _ = try await session.data(from: Self.setting(["real=2; Path=/"], on: http))
                let after = try await Self.sent(by: session, to: https.url("/cookies"))
                #expect(after["real"] as? String == "1")
            }
        }
    }

    @Test("an IP address host: a Domain attribute is refused unless it is the address, and never suffix-matched")
    func noDomainOnAddresses() async throws {
        var first = TestServer.Configuration()
        first.plainInEveryPass = true
        var second = first
        second.host = "127.0.0.2"
        try await withServer(first) { one in
            try await withServer(second) { two in
                let session = Session(configuration: testConfiguration())
                defer { session.invalidateAndCancel() }
                _ = try await session.data(
                    from: Self.setting(
                        ["suffix=1; Path=/; Domain=0.0.1", "dotted=1; Path=/; Domain=.0.0.1", "self=1; Path=/; Domain=127.0.0.1"],
                        on: one
                    )
                )
                #expect(try await Self.sent(by: session, to: one.url("/cookies")).keys.sorted() == ["self"])
                #expect(try await Self.sent(by: session, to: two.url("/cookies")).isEmpty)
                let stored = session.configuration.httpCookieStorage?.cookies ?? []
                #expect(stored.map(\.domain) == ["127.0.0.1"], "host-only: \(stored.map(\.domain))")
            }
        }
    }

    @Test("a public suffix is no cookie domain: Domain=co.uk from www.shop.co.uk reaches no other site under co.uk")
    func publicSuffixes() async throws {
        var proxy = TestServer.Configuration()
        proxy.plainInEveryPass = true
        try await withServer(proxy) { server in
            let session = Session(configuration: ProxyTests.proxied(through: server))
            defer { session.invalidateAndCancel() }
            var components = URLComponents(string: "http://www.shop.co.uk/cookies/raw")!
            components.queryItems = ["wide=1; Path=/; Domain=co.uk", "site=1; Path=/; Domain=shop.co.uk"].map {
                URLQueryItem(name: "v", value: $0)
            }
            _ = try await session.data(from: components.url!)
            #expect(try await Self.sent(by: session, to: URL(string: "http://evil.co.uk/cookies")!).isEmpty)
            #expect(try await Self.sent(by: session, to: URL(string: "http://img.shop.co.uk/cookies")!).keys.sorted()
                == ["site"])
        }
    }

    @Test("setCookies(_:for:) applies the same rules as responses; with no URL it stores as asked")
    func publicSetCookies() throws {
        let storage = CookieStorage()
        let http = URL(string: "http://a.example.com/")!
        let made = HTTPCookie.cookies(
            withResponseHeaderFields: ["Set-Cookie": "s=1; Path=/; Secure"],
            for: http
        )
        storage.setCookies(made, for: http)
        #expect(storage.cookies.isEmpty)
        storage.setCookies(made, for: URL(string: "https://a.example.com/")!)
        #expect(storage.cookies.map(\.name) == ["s"])
        let wide = HTTPCookie.cookies(
            withResponseHeaderFields: ["Set-Cookie": "w=1; Domain=com"],
            for: URL(string: "https://a.example.com/")!
        )
        storage.setCookies(wide, for: URL(string: "https://a.example.com/")!)
        #expect(storage.cookies.map(\.name) == ["s"])
    }
}
