import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `connectionProxyDictionary` against the test server as a forward proxy (it serves requests in absolute form as
/// their path). The origin is a name under `.invalid`: reachable only through the proxy, never resolved.
@Suite("Proxies", .timeLimit(.minutes(1)))
struct ProxyTests {
    static func proxied(through server: TestServer, exceptions: [String] = []) -> SessionConfiguration {
        var configuration = testConfiguration()
        configuration.connectionProxyDictionary = [
            "HTTPEnable": 1, "HTTPProxy": "127.0.0.1", "HTTPPort": server.port, "ExceptionsList": exceptions,
        ]
        return configuration
    }

    @Test("an http request goes through the session's proxy, in absolute form; an excepted host goes direct")
    func throughTheProxy() async throws {
        var proxy = TestServer.Configuration()
        proxy.plainInEveryPass = true
        try await withServer(proxy) { server in
            let session = Session(configuration: Self.proxied(through: server, exceptions: ["localhost"]))
            defer { session.invalidateAndCancel() }
            let (data, response) = try await session.data(from: URL(string: "http://origin.invalid/bytes/1000?seed=2")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(data == TestServer.bytes(count: 1000, seed: 2))
            #expect(server.requests.last?.uri == "http://origin.invalid/bytes/1000?seed=2")
            // localhost is excepted: straight to the server, in origin form.
            let direct = URL(string: "http://localhost:\(server.port)/bytes/10")!
            _ = try await session.data(from: direct)
            #expect(server.requests.last?.uri == "/bytes/10")
            // The dictionary reads back.
            #expect(session.configuration.connectionProxyDictionary?["HTTPProxy"] as? String == "127.0.0.1")
        }
    }

    @Test("a 407 is a challenge whose protection space is the proxy's; the credential goes to the proxy, and again")
    func proxyAuthentication() async throws {
        var server = TestServer.Configuration()
        server.proxyCredential = "pat:secret"
        try await withServer(server) { server in
            let (session, delegate) = makeRecordingSession(Self.proxied(through: server))
            defer { session.invalidateAndCancel() }
            let spaces = LockedValue<[URLProtectionSpace]>([])
            delegate.script {
                $0.challenge = { challenge in
                    spaces.withLock { $0.append(challenge.protectionSpace) }
                    return (.useCredential, URLCredential(user: "pat", password: "secret", persistence: .none))
                }
            }
            let task = session.dataTask(with: URL(string: "http://origin.invalid/bytes/500?seed=4")!)
            task.resume()
            #expect(try await delegate.completion(of: task) == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(delegate.body(of: task) == TestServer.bytes(count: 500, seed: 4))
            let space = try #require(spaces.withLock { $0.first })
            #expect(space.isProxy() && space.host == "127.0.0.1" && space.port == server.port)
            #expect(space.realm == "proxy" && space.authenticationMethod == NSURLAuthenticationMethodHTTPBasic)
            let requests = server.requests.filter { $0.uri.hasPrefix("http://origin.invalid/") }
            #expect(requests.count == 2)
            #expect(requests.first?.header("Proxy-Authorization") == nil)
            let sent = "Basic " + Data("pat:secret".utf8).base64EncodedString()
            #expect(requests.last?.header("Proxy-Authorization") == sent)
            #expect(requests.last?.header("Authorization") == nil, "the proxy's credential went to the origin")
        }
    }

    @Test("without an answer, a 407 is the final response")
    func proxyAuthenticationRefused() async throws {
        var server = TestServer.Configuration()
        server.proxyCredential = "pat:secret"
        try await withServer(server) { server in
            let session = Session(configuration: Self.proxied(through: server))
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.data(from: URL(string: "http://origin.invalid/bytes/10")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 407)
        }
    }

    @Test("an HTTPS proxy: reached over TLS, verified with the session's CAs, given the proxy client identity")
    func httpsProxy() async throws {
        var proxyConfiguration = TestServer.Configuration(tls: true, http2: false)
        proxyConfiguration.requiresClientCertificate = true
        let proxy = try await TestServer.start(proxyConfiguration)
        var configuration = testConfiguration()
        configuration.trustedCertificateAuthorities = .pem(proxy.certificateAuthority!.pem)
        configuration.connectionProxyDictionary = ["HTTPEnable": 1, "HTTPProxy": "https://127.0.0.1:\(proxy.port)"]
        let url = URL(string: "http://origin.invalid/bytes/10")!
        let anonymous = Session(configuration: configuration)
        await #expect(throws: CourierError.self) {
            _ = try await anonymous.data(from: url)
        }
        anonymous.invalidateAndCancel()
        #expect(proxy.requests.isEmpty)

        let identity = try proxy.makeClientIdentity()
        configuration.proxyClientIdentity = .pem(certificate: identity.certificatePEM, privateKey: identity.privateKeyPEM)
        let identified = Session(configuration: configuration)
        let (data, _) = try await identified.data(from: url)
        identified.invalidateAndCancel()
        #expect(data.count == 10)
        #expect(proxy.requests.last?.uri == "http://origin.invalid/bytes/10")
        try await proxy.shutdown()
    }

    @Test("SOCKS5 from the dictionary: the proxy resolves the name, and checks the user and password")
    func socks() async throws {
        try await withServer { server in
            let proxy = try SOCKSProxy(credential: ("ann", "p@ss:word"), names: ["origin.courier.invalid": "127.0.0.1"])
            defer { proxy.stop() }
            let scheme = server.baseURL.scheme ?? "http"
            let url = URL(string: "\(scheme)://origin.courier.invalid:\(server.port)/bytes/100")!
            var configuration = testConfiguration()
            configuration.connectionProxyDictionary = [
                "SOCKSEnable": 1, "SOCKSProxy": "127.0.0.1", "SOCKSPort": proxy.port,
                "SOCKSUser": "ann", "SOCKSPassword": "p@ss:word",
            ]
            if scheme == "https" {
                // The HTTP/2 pass's leaf names 127.0.0.1 and localhost: accept this name for the test.
                let session = Session(
                    configuration: configuration,
                    delegate: AcceptingJudge(),
                    delegateQueue: nil
                )
                defer { session.invalidateAndCancel() }
                let (data, _) = try await session.data(from: url)
                #expect(data.count == 100)
            } else {
                let session = Session(configuration: configuration)
                defer { session.invalidateAndCancel() }
                let (data, _) = try await session.data(from: url)
                #expect(data.count == 100)
            }
            let request = try #require(proxy.requests.first)
            #expect(request.target == "origin.courier.invalid" && request.port == server.port && request.user == "ann")

            configuration.connectionProxyDictionary?["SOCKSPassword"] = "wrong"
            let refused = Session(configuration: configuration)
            defer { refused.invalidateAndCancel() }
            await #expect {
                _ = try await refused.data(from: url)
            } throws: { error in
                (error as? CourierError)?.code == .cannotConnectToHost
            }
            #expect(server.requests.count == 1)
        }
    }
}

/// Accepts every server (a name the test's leaf does not carry).
private final class AcceptingJudge: SessionTaskDelegate {
    func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.useCredential, challenge.protectionSpace.serverTrustDetails.map(URLCredential.init(trust:)))
    }
}
