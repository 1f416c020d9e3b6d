import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Authentication challenges", .timeLimit(.minutes(1)))
struct AuthenticationTests {
    /// Every shape of a challenge's body real servers send: their own, `Content-Length: 0`, chunked and empty
    /// (an empty-bodied challenge once ended the task before the delegate's credential was tried).
    static let bodyShapes = ["route", "empty", "chunked-empty"]

    @Test("Basic and Digest through the challenge delegate", arguments: ["basic", "digest"], Self.bodyShapes)
    func challenge(scheme: String, shape: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script {
                $0.challenge = { _ in (.useCredential, URLCredential(user: "ann", password: "pw", persistence: .none)) }
            }
            let task = session.dataTask(with: server.url("/\(scheme)-auth/ann/pw?body=\(shape)"))
            task.resume()
            let outcome6 = try await delegate.completion(of: task)
            #expect(outcome6 == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            if shape == "route" {
                #expect(jsonObject(delegate.body(of: task))["authenticated"] as? Bool == true)
            }
            #expect(server.requests.last?.header("Authorization") != nil)
            let challenges = delegate.events(of: task).compactMap { event -> String? in
                if case .challenge(_, let method, _) = event { return method }
                return nil
            }
            let expected = scheme == "basic" ? NSURLAuthenticationMethodHTTPBasic : NSURLAuthenticationMethodHTTPDigest
            #expect(challenges == [expected])
        }
    }

    @Test("a wrong password ends after one retry with the 401 as the final response",
          arguments: ["basic", "digest"], Self.bodyShapes)
    func wrongPassword(scheme: String, shape: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script {
                $0.challenge = { _ in
                    (.useCredential, URLCredential(user: "ann", password: "wrong", persistence: .none))
                }
            }
            let task = session.dataTask(with: server.url("/\(scheme)-auth/ann/pw?body=\(shape)"))
            task.resume()
            let outcome7 = try await delegate.completion(of: task)
            #expect(outcome7 == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 401)
            // Basic: the challenge, then the one retry. Digest: curl's own round trip for the nonce adds one.
            #expect(server.requests.count == (scheme == "basic" ? 2 : 3))
        }
    }

    @Test("cancelling the challenge cancels the task; rejecting delivers the 401")
    func cancelAndReject() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script { $0.challenge = { _ in (.cancelAuthenticationChallenge, nil) } }
            let cancelled = session.dataTask(with: server.url("/basic-auth/a/b"))
            cancelled.resume()
            let outcome8 = try await delegate.completion(of: cancelled)
            #expect(outcome8?.code == .cancelled)
            delegate.script { $0.challenge = { _ in (.rejectProtectionSpace, nil) } }
            let rejected = session.dataTask(with: server.url("/basic-auth/a/b"))
            rejected.resume()
            let outcome9 = try await delegate.completion(of: rejected)
            #expect(outcome9 == nil)
            #expect((rejected.response as? HTTPURLResponse)?.statusCode == 401)
        }
    }

    @Test("default handling uses the configuration's credential storage and URL credentials")
    func defaultHandling() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            let storage = CredentialStorage()
            storage.set(
                URLCredential(user: "bob", password: "pw", persistence: .none),
                host: "127.0.0.1",
                port: server.port
            )
            configuration.urlCredentialStorage = storage
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.data(from: server.url("/digest-auth/bob/pw"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let plain = Session(configuration: testConfiguration())
            defer { plain.invalidateAndCancel() }
            var components = URLComponents(url: server.url("/basic-auth/carol/secret"), resolvingAgainstBaseURL: false)!
            components.user = "carol"
            components.password = "secret"
            let withUser = components.url!
            let (_, response2) = try await plain.data(from: withUser)
            #expect((response2 as? HTTPURLResponse)?.statusCode == 200)
            let (_, response3) = try await plain.data(from: server.url("/basic-auth/carol/secret"))
            #expect((response3 as? HTTPURLResponse)?.statusCode == 401)
        }
    }

    @Test("a credential the delegate gave with a persistence is kept; a .permanent one in the store's .netrc file")
    func keptCredentials() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-credentials-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        try await withServer { server in
            var configuration = testConfiguration()
            let storage = try CredentialStorage(persistingTo: file)
            configuration.urlCredentialStorage = storage
            let (session, delegate) = makeRecordingSession(configuration)
            defer { session.invalidateAndCancel() }
            delegate.script {
                $0.challenge = { _ in
                    (.useCredential, URLCredential(user: "kim", password: "k 1", persistence: .permanent))
                }
            }
            let first = session.dataTask(with: server.url("/basic-auth/kim/k%201"))
            first.resume()
            _ = try await delegate.completion(of: first)
            #expect((first.response as? HTTPURLResponse)?.statusCode == 200)
            storage.synchronize()
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            // A new store reads it back; curl's --netrc-file reads the same file.
            let reread = try CredentialStorage(persistingTo: file)
            let space = URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: "courier",
                                           authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            #expect(reread.credential(for: space)?.user == "kim" && reread.credential(for: space)?.password == "k 1")
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--netrc-file", file.path]
                + (server.baseURL.scheme == "https" ? ["-k"] : [])
                + [server.url("/basic-auth/kim/k%201").absoluteString]
            let output = Pipe()
            curl.standardOutput = output
            try curl.run()
            let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            curl.waitUntilExit()
            #expect(status == "200")
        }
    }

    @Test("NTLM: the challenge goes to the delegate; libcurl's handshake proves the password; a wrong one gets the 401",
          onlyOverHTTP1("NTLM authenticates an HTTP/1.1 connection"))
    func ntlm() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script {
                $0.challenge = { _ in (.useCredential, URLCredential(user: "erin", password: "n7lm!", persistence: .none)) }
            }
            let task = session.dataTask(with: server.url("/ntlm-auth/erin/n7lm!"))
            task.resume()
            let outcome = try await delegate.completion(of: task)
            #expect(outcome == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(jsonObject(delegate.body(of: task))["user"] as? String == "erin")
            let methods = delegate.events(of: task).compactMap { event -> String? in
                if case .challenge(_, let method, _) = event { return method }
                return nil
            }
            #expect(methods == [NSURLAuthenticationMethodNTLM])

            delegate.script {
                $0.challenge = { _ in (.useCredential, URLCredential(user: "erin", password: "nope", persistence: .none)) }
            }
            let refused = session.dataTask(with: server.url("/ntlm-auth/erin/n7lm!"))
            refused.resume()
            _ = try await delegate.completion(of: refused)
            #expect((refused.response as? HTTPURLResponse)?.statusCode == 401)
        }
    }

    @Test("a .netrc file's machine answers its host's challenge by default; another host's, default and macdef do not")
    func netrc() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-netrc-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        let text = """
            machine elsewhere.example login nobody password nothing
            macdef init
            login trap password trap

            machine 127.0.0.1
                login dave
                password "pass word"
            default login anyone password anything
            """
        try Data(text.utf8).write(to: file)
        try await withServer { server in
            var configuration = testConfiguration()
            let storage = CredentialStorage()
            try storage.readNetrcFile(at: file)
            configuration.urlCredentialStorage = storage
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let path = "/basic-auth/dave/" + "pass word".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let (_, response) = try await session.data(from: server.url(path))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let (_, other) = try await session.data(from: server.url("/basic-auth/anyone/anything"))
            #expect((other as? HTTPURLResponse)?.statusCode == 401)
        }
    }
}

/// Two minutes: a test starts up to four TLS servers, each with certificates of its own, and under the whole suite's
/// load on a two-core machine the longest took past one.
@Suite("TLS", .timeLimit(.minutes(2)))
struct TLSTests {
    @Test("a trusted test CA works and HTTP/2 is negotiated; metrics say h2")
    func trustedHTTP2() async throws {
        try await withServer(.init(tls: true)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let (session, delegate) = makeRecordingSession(configuration)
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/h2"))
            task.resume()
            let outcome10 = try await delegate.completion(of: task)
            #expect(outcome10 == nil)
            #expect(jsonObject(delegate.body(of: task))["httpVersion"] as? String == "2")
            let metrics = delegate.events(of: task).compactMap { event -> SessionTaskMetrics? in
                if case .metrics(_, let metrics) = event { return metrics }
                return nil
            }
            #expect(metrics.first?.transactionMetrics.last?.networkProtocolName == "h2")
            #expect(metrics.first?.transactionMetrics.last?.secureConnectionStartDate != nil)
        }
    }

    @Test("HTTP/2 multiplexes many requests over few connections")
    func multiplexing() async throws {
        try await withServer(.init(tls: true)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            configuration.httpMaximumConnectionsPerHost = 2
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            try await withThrowingTaskGroup(of: Data.self) { group in
                for index in 0..<40 {
                    group.addTask { try await session.data(from: server.url("/bytes/2000?seed=\(index)&delay=50")).0 }
                }
                for try await data in group {
                    #expect(data.count == 2000)
                }
            }
            #expect(server.connectionCount <= 2)
        }
    }

    @Test("without the CA the server is untrusted; so are an expired leaf, an unknown CA and a wrong host name")
    func untrusted() async throws {
        try await withServer(.init(tls: true)) { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.data(from: server.url("/bytes/1"))
            } throws: { error in
                (error as? CourierError)?.code == .serverCertificateUntrusted
            }
        }
        for configuration in [
            TestServer.Configuration(tls: true, expiredCertificate: true),
            TestServer.Configuration(tls: true, untrustedCertificate: true),
        ] {
            try await withServer(configuration) { server in
                var configuration = testConfiguration()
                configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
                let session = Session(configuration: configuration)
                defer { session.invalidateAndCancel() }
                await #expect {
                    _ = try await session.data(from: server.url("/bytes/1"))
                } throws: { error in
                    (error as? CourierError)?.code == .serverCertificateUntrusted
                }
            }
        }
        try await withServer(.init(tls: true, wrongHostName: true)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.data(from: server.url("/bytes/1"))
            } throws: { error in
                (error as? CourierError)?.code == .serverCertificateUntrusted
            }
        }
    }

    @Test("TLS over HTTP/1.1 only")
    func http1TLS() async throws {
        try await withServer(.init(tls: true, http2: false)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let (data, _) = try await session.data(from: server.url("/h2"))
            #expect(jsonObject(data)["httpVersion"] as? String == "1.1")
        }
    }
}

@Suite("Cookies", .timeLimit(.minutes(1)))
struct CookieTests {
    @Test("ephemeral sessions keep cookies in their own memory jar")
    func ephemeral() async throws {
        try await withServer { server in
            let first = Session(configuration: testConfiguration())
            let second = Session(configuration: testConfiguration())
            defer {
                first.invalidateAndCancel()
                second.invalidateAndCancel()
            }
            _ = try await first.data(from: server.url("/cookies/set?flavour=oat&size=xl"))
            let (data, _) = try await first.data(from: server.url("/cookies"))
            let cookies = jsonObject(data)
            #expect(cookies["flavour"] as? String == "oat")
            #expect(cookies["size"] as? String == "xl")
            #expect(first.configuration.httpCookieStorage?.cookies.count == 2)
            let (other, _) = try await second.data(from: server.url("/cookies"))
            #expect(jsonObject(other).isEmpty)
        }
    }

    @Test("cookies set by a redirect response are stored and sent on the next hop")
    func cookiesOnRedirect() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            // /cookies/set answers 200; chain it through a redirect to see a Set-Cookie on a 3xx path too.
            _ = try await session.data(from: server.url("/redirect-to?url=%2Fcookies%2Fset%3Fa%3D1"))
            let (data, _) = try await session.data(from: server.url("/redirect-to?url=%2Fcookies"))
            #expect(jsonObject(data)["a"] as? String == "1")
        }
    }

    @Test("httpShouldSetCookies = false sends and stores none")
    func disabled() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.httpShouldSetCookies = false
            let storage = try #require(configuration.httpCookieStorage)
            // A cookie the jar holds for this server: it must not be sent.
            let kept = try #require(
                HTTPCookie(properties: [
                    .name: "kept", .value: "1", .domain: "127.0.0.1", .path: "/", .originURL: server.baseURL,
                ])
            )
            storage.setCookie(kept)
            #expect(storage.cookies(for: server.url("/cookies")).map(\.name) == ["kept"])
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/cookies/set?a=1"))
            let (data, _) = try await session.data(from: server.url("/cookies"))
            #expect(jsonObject(data).isEmpty)
            #expect(server.requests.allSatisfy { $0.header("Cookie") == nil })
            #expect(storage.cookies.map(\.name) == ["kept"])
        }
    }
}
