import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One download written once and run on each backend under the task layer: the in-process engine, the serialised
/// backend (every spec and event through its encoding) and courierd (a real daemon process). The response reaches
/// the task as the server sent it on each: repeated fields apart and in their order, and the HTTP version; its metrics
/// are the exchange's.
@Suite("the response through every backend", .blockingWaits, .serialized)
struct ResponseAcrossBackendsTests {
    enum Backend: String, CaseIterable, Sendable {
        case inProcess
        case serialised
        case courierd

        /// A configuration for this backend: ephemeral (serialised or not), or a background session named `name`
        /// in `place`.
        func configuration(_ name: String, in place: BackgroundSessionTests.Place) -> SessionConfiguration {
            switch self {
            case .inProcess, .serialised:
                var configuration = SessionConfiguration.ephemeral
                configuration.serialisesBackend = self == .serialised
                return configuration
            case .courierd:
                return place.configuration("com.example.\(name).\(rawValue)")
            }
        }
    }

    @Test("repeated Set-Cookie fields, one with an Expires date, and the HTTP version", arguments: Backend.allCases)
    func responseWhole(_ backend: Backend) async throws {
        let server = try await TestServer.start()
        let place = BackgroundSessionTests.Place()
        defer { place.cleanup() }
        let configuration = backend.configuration("fields", in: place)
        let recorder = BackgroundSessionTests.Recorder()
        let session = Session(configuration: configuration, delegate: recorder)
        let expires = "Wed, 21 Oct 2037 07:28:00 GMT"
        let first = "1; Expires=\(expires)".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let task = session.downloadTask(with: server.url("/cookies/set?a=\(first)&b=2&c=3"))
        task.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        let head = try #require(task.receivedHead)
        #expect(head.status == 200)
        #expect(head.httpVersion == "HTTP/1.1")
        #expect(head.setCookies == ["a=1; Expires=\(expires); Path=/", "b=2; Path=/", "c=3; Path=/"])
        #expect(head.fieldLines.filter { $0.name.lowercased() == "set-cookie" }.count == 3)
        // The metrics describe the exchange that really happened (for courierd, its own, measured there).
        let exchange = try #require(recorder.metrics[task.taskIdentifier]?.transactionMetrics.last)
        #expect(exchange.remoteAddress == "127.0.0.1")
        #expect(exchange.remotePort == server.port)
        #expect(exchange.networkProtocolName == "http/1.1")
        #expect(exchange.responseEndDate != nil)
        #expect(exchange.countOfResponseHeaderBytesReceived > 0)
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("the request reaches the wire as the app built it: through its session's proxy, with its header fields", arguments: Backend.allCases)
    func requestAsBuilt(_ backend: Backend) async throws {
        // The origin is reachable only through the proxy (a name under .invalid is never resolved).
        let server = try await TestServer.start()
        let place = BackgroundSessionTests.Place()
        defer { place.cleanup() }
        var configuration = backend.configuration("proxied", in: place)
        configuration.connectionProxyDictionary = ["HTTPEnable": 1, "HTTPProxy": "127.0.0.1", "HTTPPort": server.port]
        configuration.httpAdditionalHeaders = ["X-Session": "s1"]
        configuration.timeoutIntervalForResource = 20
        let recorder = BackgroundSessionTests.Recorder()
        let session = Session(configuration: configuration, delegate: recorder)
        let path = "/bytes/2048?seed=7&backend=\(backend.rawValue)"
        var request = URLRequest(url: URL(string: "http://origin.invalid\(path)")!)
        request.setValue("token-1", forHTTPHeaderField: "X-App-Token")
        request.setValue("application/octet-stream", forHTTPHeaderField: "Accept")
        let task = session.downloadTask(with: request)
        task.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil), "\(String(describing: recorder.errors[task.taskIdentifier]))")
        #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 2048, seed: 7))
        let sent = try #require(server.requests.last { $0.uri == "http://origin.invalid\(path)" })
        #expect(sent.header("X-App-Token") == "token-1")
        #expect(sent.header("Accept") == "application/octet-stream")
        #expect(sent.header("X-Session") == "s1")
        #expect(sent.headerValues("User-Agent").count == 1)
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("a URL's user and password answer its origin's challenge, and are never listed", arguments: Backend.allCases)
    func credentialsInTheURL(_ backend: Backend) async throws {
        let server = try await TestServer.start()
        let place = BackgroundSessionTests.Place()
        defer { place.cleanup() }
        let configuration = backend.configuration("credentials", in: place)
        let recorder = BackgroundSessionTests.Recorder()
        let session = Session(configuration: configuration, delegate: recorder)
        var components = URLComponents(url: server.url("/basic-auth/carol/secret"), resolvingAgainstBaseURL: false)!
        components.user = "carol"
        components.password = "secret"
        let task = session.downloadTask(with: components.url!)
        task.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        #expect(recorder.statuses[task.taskIdentifier] == 200)
        let sent = server.requests.filter { $0.uri == "/basic-auth/carol/secret" }
        #expect(sent.last?.header("Authorization") == "Basic " + Data("carol:secret".utf8).base64EncodedString())
        if backend == .courierd {
            // What courierd lists of the task (to the app, to `courier tasks`) holds no password.
            var looking = try Client.looking(at: place.paths.socket.path)
            defer { looking.close() }
            let answer = try looking.request {
                .listTasks(.init(request: $0, session: "com.example.credentials.\(backend.rawValue)", includesEnded: true))
            }
            guard case .reply(let reply)? = answer, case .tasks(let listed) = reply.result else {
                Issue.record("no listing: \(String(describing: answer))")
                return
            }
            #expect(!listed.isEmpty)
            for snapshot in listed {
                #expect(snapshot.task?.spec.task?.credentialURL == nil)
                #expect(snapshot.task?.spec.url.contains("carol:secret@") == false)
            }
        }
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("the session's TLS settings go with the task: its client certificate, and its pins", arguments: Backend.allCases)
    func tlsSettings(_ backend: Backend) async throws {
        var serverConfiguration = TestServer.Configuration(tls: true, http2: false)
        serverConfiguration.requiresClientCertificate = true
        let server = try await TestServer.start(serverConfiguration)
        let place = BackgroundSessionTests.Place()
        defer { place.cleanup() }
        let authority = try #require(server.certificateAuthority)
        let identity = try server.makeClientIdentity()
        let pin = try TestCertificateAuthority.publicKeyHash(ofCertificatePEM: authority.leaf.certificatePEM)
        for (name, pins) in [("pinned", [pin]), ("mispinned", [Data(repeating: 1, count: 32).base64EncodedString()])] {
            var configuration = backend.configuration(name, in: place)
            configuration.trustedCertificateAuthorities = .pem(authority.pem)
            configuration.clientIdentity = .pem(certificate: identity.certificatePEM, privateKey: identity.privateKeyPEM)
            configuration.pinnedPublicKeys = ["127.0.0.1": pins]
            configuration.timeoutIntervalForResource = 15
            let recorder = BackgroundSessionTests.Recorder()
            let session = Session(configuration: configuration, delegate: recorder)
            let task = session.downloadTask(with: server.url("/bytes/4096?seed=3&session=\(name)"))
            task.resume()
            #expect(recorder.waitForCompletions(1, timeout: 30))
            if name == "pinned" {
                #expect(recorder.errors[task.taskIdentifier] == .some(nil))
                #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 4096, seed: 3))
            } else {
                let error = recorder.errors[task.taskIdentifier] ?? nil
                #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error))")
            }
            session.finishTasksAndInvalidate()
        }
        #expect(server.requests.filter { $0.uri.contains("session=mispinned") }.isEmpty)
        #expect(server.requests.filter { $0.uri.contains("session=pinned") }.count == 1)
        try await server.shutdown()
    }

    @Test("the file handed over has the mode a file of the app gets; the directory it waits in is private", arguments: Backend.allCases)
    func fileMode(_ backend: Backend) async throws {
        let server = try await TestServer.start()
        let place = BackgroundSessionTests.Place()
        defer { place.cleanup() }
        let recorder = BackgroundSessionTests.Recorder()
        let session = Session(configuration: backend.configuration("mode", in: place), delegate: recorder)
        let task = session.downloadTask(with: server.url("/bytes/1000"))
        task.resume()
        #expect(recorder.waitForCompletions(1))
        let mask = umask(0o022)
        umask(mask)
        let modes = try #require(recorder.modes[task.taskIdentifier])
        #expect(modes.file == 0o666 & ~mask, "file mode \(String(modes.file, radix: 8))")
        #expect(modes.directory == 0o700, "directory mode \(String(modes.directory, radix: 8))")
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }
}

