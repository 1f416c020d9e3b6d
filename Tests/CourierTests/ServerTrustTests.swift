import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session delegate that judges servers with `answer` and keeps every server-trust challenge it was given.
private final class TrustJudge: SessionTaskDelegate {
    let answer: @Sendable (ServerTrust) -> (Session.AuthChallengeDisposition, URLCredential?)
    let seen = LockedValue<[ServerTrust]>([])

    init(_ answer: @escaping @Sendable (ServerTrust) -> (Session.AuthChallengeDisposition, URLCredential?)) {
        self.answer = answer
    }

    func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard challenge.protectionSpace.authenticationMethod == URLAuthenticationMethodServerTrust,
            let trust = challenge.protectionSpace.serverTrustDetails
        else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        seen.withLock { $0.append(trust) }
        let (disposition, credential) = answer(trust)
        completionHandler(disposition, credential)
    }
}

/// Only the task-level challenge method, as iOS code written for a task delegate has it.
private final class TaskLevelJudge: SessionTaskDelegate {
    let challenges = LockedValue(0)

    func urlSession(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let trust = challenge.protectionSpace.serverTrustDetails else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        challenges.withLock { $0 += 1 }
        completionHandler(.useCredential, URLCredential(trust: trust))
    }
}

/// A delegate that implements no challenge method at all.
private final class Indifferent: SessionTaskDelegate {}

private func session(_ delegate: any SessionDelegate, _ configure: (inout SessionConfiguration) -> Void = { _ in })
    -> Session
{
    var configuration = testConfiguration()
    configure(&configuration)
    return Session(configuration: configuration, delegate: delegate, delegateQueue: nil)
}

private func failure(_ session: Session, _ url: URL) async -> CourierError? {
    do {
        _ = try await session.data(from: url)
        return nil
    } catch {
        return error as? CourierError
    }
}

@Suite("Server trust: the delegate's challenge, pins, TLS versions", .timeLimit(.minutes(1)))
struct ServerTrustTests {
    @Test("a server of an unknown CA is accepted by the delegate for the session: asked once, no request before")
    func acceptedByDelegate() async throws {
        try await withServer(.init(tls: true, untrustedCertificate: true)) { server in
            let judge = TrustJudge { (.useCredential, URLCredential(trust: $0)) }
            let session = session(judge) { $0.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem) }
            defer { session.invalidateAndCancel() }
            let (data, response) = try await session.data(from: server.url("/bytes/64"))
            #expect(data.count == 64 && (response as? HTTPURLResponse)?.statusCode == 200)
            _ = try await session.data(from: server.url("/bytes/8"))
            let seen = judge.seen.withLock { $0 }
            #expect(seen.count == 1)
            let trust = try #require(seen.first)
            #expect(!trust.isTrusted && trust.verificationFailure != nil)
            #expect(trust.host == "127.0.0.1" && trust.port == server.port)
            #expect(!trust.certificates.isEmpty)
            #expect(server.requests.count == 2)
        }
    }

    @Test("default handling refuses an untrusted server, cancelling cancels; neither sends a request")
    func refusedAndCancelled() async throws {
        try await withServer(.init(tls: true, untrustedCertificate: true)) { server in
            let defaulted = session(TrustJudge { _ in (.performDefaultHandling, nil) }) {
                $0.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            }
            defer { defaulted.invalidateAndCancel() }
            let refusal = await failure(defaulted, server.url("/bytes/1"))
            #expect(refusal?.code == .serverCertificateUntrusted)
            #expect(refusal?.message.contains("not trusted") == true)

            let cancelling = session(TrustJudge { _ in (.cancelAuthenticationChallenge, nil) })
            defer { cancelling.invalidateAndCancel() }
            #expect(await failure(cancelling, server.url("/bytes/1"))?.code == .cancelled)
            #expect(server.requests.isEmpty)
        }
    }

    @Test("a trusted server is shown verified; a certificate of another host is shown with its verdict")
    func verdicts() async throws {
        try await withServer(.init(tls: true)) { server in
            let judge = TrustJudge { _ in (.performDefaultHandling, nil) }
            let session = session(judge) { $0.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem) }
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/bytes/1"))
            let trust = try #require(judge.seen.withLock { $0.first })
            #expect(trust.isTrusted && trust.verificationResult == 0)
            let expected = try TestCertificateAuthority.publicKeyHash(
                ofCertificatePEM: server.certificateAuthority!.leaf.certificatePEM
            )
            #expect(trust.publicKeyHashes.first == expected)
        }
        try await withServer(.init(tls: true, wrongHostName: true)) { server in
            let judge = TrustJudge { (.useCredential, URLCredential(trust: $0)) }
            let session = session(judge) { $0.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem) }
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/bytes/1"))
            let trust = try #require(judge.seen.withLock { $0.first })
            #expect(trust.verificationResult == 62)
            #expect(trust.verificationFailure == "the certificate does not name this host")
        }
    }

    @Test("the task delegate answers when the session delegate does not; a delegate that judges nothing is not asked")
    func taskLevelAndIndifferent() async throws {
        try await withServer(.init(tls: true, untrustedCertificate: true)) { server in
            let judge = TaskLevelJudge()
            let session = session(judge)
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/bytes/1"))
            #expect(judge.challenges.withLock { $0 } == 1)
        }
        try await withServer(.init(tls: true)) { server in
            let session = session(Indifferent()) {
                $0.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            }
            defer { session.invalidateAndCancel() }
            for _ in 0..<3 {
                _ = try await session.data(from: server.url("/bytes/1"))
            }
            // The first connection stopped to learn that nobody judges; every later task used one verified one.
            #expect(server.connectionCount == 2)
        }
    }

    @Test("a pinned key is accepted; a wrong pin refuses the server before any request")
    func pins() async throws {
        try await withServer(.init(tls: true)) { server in
            let pin = try TestCertificateAuthority.publicKeyHash(
                ofCertificatePEM: server.certificateAuthority!.leaf.certificatePEM
            )
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            configuration.pinnedPublicKeys = ["127.0.0.1": [Data(repeating: 7, count: 32).base64EncodedString(), pin]]
            let pinned = Session(configuration: configuration)
            defer { pinned.invalidateAndCancel() }
            _ = try await pinned.data(from: server.url("/bytes/1"))
            #expect(server.requests.count == 1)

            configuration.pinnedPublicKeys = ["127.0.0.1": [Data(repeating: 7, count: 32).base64EncodedString()]]
            let wrong = Session(configuration: configuration)
            defer { wrong.invalidateAndCancel() }
            let refusal = await failure(wrong, server.url("/bytes/1"))
            #expect(refusal?.code == .serverCertificateUntrusted)
            #expect(refusal?.message.contains("pinned") == true)
            // Nor does a delegate's acceptance get past a pin.
            let judged = session(TrustJudge { (.useCredential, URLCredential(trust: $0)) }) {
                $0 = configuration
            }
            defer { judged.invalidateAndCancel() }
            #expect(await failure(judged, server.url("/bytes/1"))?.code == .serverCertificateUntrusted)
            #expect(server.requests.count == 1)
        }
    }

    @Test("a TLS 1.3 minimum refuses a TLS 1.2 server; the default talks to it")
    func minimumVersion() async throws {
        var server = TestServer.Configuration(tls: true)
        server.tls12Only = true
        try await withServer(server) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/bytes/1"))
            configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
            let strict = Session(configuration: configuration)
            defer { strict.invalidateAndCancel() }
            #expect(await failure(strict, server.url("/bytes/1"))?.code == .secureConnectionFailed)
            #expect(server.requests.count == 1)
        }
    }
}

@Suite("HSTS", .timeLimit(.minutes(1)))
struct HSTSTests {
    @Test("after one https visit, an http URL of the host goes out as https; max-age=0 forgets it; not for an address")
    func upgrade() async throws {
        try await withServer(.init(tls: true)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-hsts-\(UUID()).txt")
            defer { try? FileManager.default.removeItem(at: file) }
            let store = try HSTSStorage(persistingTo: file)
            configuration.hstsStorage = store
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let plain = URL(string: "http://localhost:\(server.port)/bytes/7")!
            // Before: plain http to a TLS port fails.
            #expect(await failure(session, plain) != nil)
            // From an address: not recorded.
            _ = try await session.data(from: server.url("/bytes/1?hsts=max-age%3D3600"))
            #expect(!store.isKnown("127.0.0.1"))
            let secure = URL(string: "https://localhost:\(server.port)/bytes/1?hsts=max-age%3D3600")!
            _ = try await session.data(from: secure)
            #expect(store.isKnown("localhost"))
            let (data, _) = try await session.data(from: plain)
            #expect(data.count == 7)
            store.synchronize()
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.contains("localhost \""))
            // A new store reads the file curl's way.
            #expect(try HSTSStorage(persistingTo: file).isKnown("localhost"))
            _ = try await session.data(from: URL(string: "https://localhost:\(server.port)/bytes/1?hsts=max-age%3D0")!)
            #expect(!store.isKnown("localhost"))
        }
    }
}

@Suite("Client certificates (mutual TLS)", .timeLimit(.minutes(1)))
struct ClientIdentityTests {
    @Test("a server that requires a client certificate gets the configuration's; without one, no request")
    func mutualTLS() async throws {
        var server = TestServer.Configuration(tls: true)
        server.requiresClientCertificate = true
        try await withServer(server) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let anonymous = Session(configuration: configuration)
            defer { anonymous.invalidateAndCancel() }
            #expect(await failure(anonymous, server.url("/bytes/1")) != nil)
            #expect(server.requests.isEmpty)

            let identity = try server.makeClientIdentity()
            configuration.clientIdentity = .pem(
                certificate: identity.certificatePEM,
                privateKey: identity.privateKeyPEM
            )
            let identified = Session(configuration: configuration)
            defer { identified.invalidateAndCancel() }
            let (data, _) = try await identified.data(from: server.url("/bytes/32"))
            #expect(data.count == 32)
            #expect(server.requests.count == 1)
        }
    }
}

@Suite("Connection targeting", .timeLimit(.minutes(1)))
struct ConnectionTargetingTests {
    @Test("HTTP over a Unix-domain socket: an http+unix URL, or the configuration's socket")
    func unixSocket() async throws {
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString).sock")
        var server = TestServer.Configuration()
        server.unixSocketPath = socket.path
        try await withServer(server) { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (data, response) = try await session.data(from: server.url("/bytes/100"))
            #expect(data.count == 100 && (response as? HTTPURLResponse)?.statusCode == 200)

            var configuration = testConfiguration()
            configuration.unixSocketPath = socket.path
            let configured = Session(configuration: configuration)
            defer { configured.invalidateAndCancel() }
            let (echo, _) = try await configured.data(from: URL(string: "http://docker.local/headers")!)
            #expect(jsonObject(echo)["host"] as? String == "docker.local")
            #expect(server.requests.count == 2)
        }
        try? FileManager.default.removeItem(at: socket)
    }

    @Test("host addresses answer a name without DNS; the Host field keeps the name")
    func hostAddresses() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.hostAddresses = ["courier-test.invalid": ["127.0.0.1"]]
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let scheme = server.baseURL.scheme ?? "http"
            let url = URL(string: "\(scheme)://courier-test.invalid:\(server.port)/bytes/5")!
            if scheme == "https" {
                // The shared CA's leaf names 127.0.0.1 and localhost only: the name is refused, as it should be.
                #expect(await failure(session, url)?.code == .serverCertificateUntrusted)
                return
            }
            let (data, _) = try await session.data(from: url)
            #expect(data.count == 5)
            #expect(server.requests.last?.header("Host") == "courier-test.invalid:\(server.port)")
        }
    }
}
