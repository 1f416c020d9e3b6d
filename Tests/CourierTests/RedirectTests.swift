import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Redirects", .timeLimit(.minutes(1)))
struct RedirectTests {
    @Test("redirects are followed; the delegate hears each hop; metrics have one transaction per hop")
    func follow() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/redirect/3?to=/bytes/100%3Fseed%3D3"))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            let redirects = delegate.events(of: task).filter {
                if case .redirect = $0 { return true } else { return false }
            }
            #expect(redirects.count == 3)
            #expect(delegate.body(of: task) == TestServer.bytes(count: 100, seed: 3))
            #expect(task.currentRequest?.url?.path == "/bytes/100")
            #expect(task.originalRequest?.url?.path == "/redirect/3")
            let metrics = delegate.events(of: task).compactMap { event -> SessionTaskMetrics? in
                if case .metrics(_, let metrics) = event { return metrics }
                return nil
            }
            #expect(metrics.first?.transactionMetrics.count == 4)
            #expect(metrics.first?.redirectCount == 3)
            // Each exchange's request and response, built when read; the last response is the task's own object.
            var exchanges = try #require(metrics.first?.transactionMetrics)
            #expect(exchanges.map { $0.request.url?.path } == ["/redirect/3", "/redirect/2", "/redirect/1", "/bytes/100"])
            #expect(exchanges.dropLast().allSatisfy { ($0.response as? HTTPURLResponse)?.statusCode == 302 })
            #expect(exchanges.last?.response === task.response)
            #expect(exchanges.last?.request.url == task.currentRequest?.url)
            // The app may change both, as URLSession's metrics allow.
            exchanges[0].request = URLRequest(url: server.url("/changed"))
            exchanges[0].response = nil
            #expect(exchanges[0].request.url?.path == "/changed" && exchanges[0].response == nil)
        }
    }

    @Test("without a delegate, async data follows redirects")
    func followWithoutDelegate() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (data, response) = try await session.data(from: server.url("/redirect/2"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(data == TestServer.bytes(count: 16))
        }
    }

    @Test("the delegate can refuse: the 3xx is the final response")
    func refuse() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script { $0.redirect = { _, _ in nil } }
            let task = session.dataTask(with: server.url("/redirect/1"))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 302)
            #expect(server.requests.filter { $0.path.hasPrefix("/bytes") }.isEmpty)
        }
    }

    @Test("the delegate can change the target")
    func change() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let target = server.url("/bytes/77?seed=1")
            delegate.script { $0.redirect = { _, _ in URLRequest(url: target) } }
            let task = session.dataTask(with: server.url("/redirect/1"))
            task.resume()
            let outcome11 = try await delegate.completion(of: task)
            #expect(outcome11 == nil)
            #expect(delegate.body(of: task) == TestServer.bytes(count: 77, seed: 1))
        }
    }

    @Test("more than 16 hops fails with httpTooManyRedirects; so does a loop")
    func tooMany() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            // 16 hops are fine.
            let (data, _) = try await session.data(from: server.url("/redirect/16"))
            #expect(data.count == 16)
            for path in ["/redirect/17", "/redirect-loop"] {
                await #expect {
                    _ = try await session.data(from: server.url(path))
                } throws: { error in
                    (error as? CourierError)?.code == .httpTooManyRedirects
                }
            }
        }
    }

    @Test("303 turns POST into GET without a body; 307 keeps method and body")
    func methodRewrite() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            for (status, method, length) in [(303, "GET", 0), (307, "POST", 5), (302, "GET", 0), (308, "POST", 5)] {
                server.removeAllRequests()
                var request = URLRequest(url: server.url("/redirect-to?url=/echo&status=\(status)"))
                request.httpMethod = "POST"
                request.httpBody = Data("abcde".utf8)
                let (data, _) = try await session.data(for: request)
                let last = server.requests.last
                #expect(last?.path == "/echo", "status \(status)")
                #expect(last?.method == method, "status \(status)")
                #expect(last?.bodyLength == length, "status \(status)")
                #expect(data.count == length, "status \(status)")
            }
        }
    }

    @Test("Authorization and Cookie are not carried to another origin, and are kept on the same origin")
    func crossOrigin() async throws {
        try await withServer { a in
            try await withServer { b in
                let session = Session(configuration: testConfiguration())
                defer { session.invalidateAndCancel() }
                let target = b.url("/headers").absoluteString
                var request = URLRequest(
                    url: a.url(
                        "/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
                    )
                )
                request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
                request.setValue("session=secret", forHTTPHeaderField: "Cookie")
                request.setValue("kept", forHTTPHeaderField: "X-Other")
                let (data, _) = try await session.data(for: request)
                let headers = jsonObject(data)
                #expect(headers["authorization"] == nil)
                #expect(headers["cookie"] == nil)
                #expect(headers["x-other"] as? String == "kept")
                // Same origin keeps it.
                var same = URLRequest(url: a.url("/redirect-to?url=/headers"))
                same.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
                let (sameData, _) = try await session.data(for: same)
                #expect(jsonObject(sameData)["authorization"] as? String == "Bearer secret")
            }
        }
    }

    @Test("https to http and non-HTTP schemes are refused")
    func refusedTargets() async throws {
        var plainServer = TestServer.Configuration()
        plainServer.plainInEveryPass = true
        try await withServer(.init(tls: true)) { tls in
            try await withServer(plainServer) { plain in
                var configuration = testConfiguration()
                configuration.trustedCertificateAuthorities = .pem(tls.certificateAuthority!.pem)
                let session = Session(configuration: configuration)
                defer { session.invalidateAndCancel() }
                let downgrade = plain.url("/bytes/1").absoluteString
                    .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                await #expect {
                    _ = try await session.data(
                        from: tls.url(
                            "/redirect-to?url=\(downgrade)"
                        )
                    )
                } throws: { error in
                    (error as? CourierError)?.code == .insecureRedirect
                }
                #expect(plain.requests.isEmpty)
                await #expect {
                    _ = try await session.data(from: tls.url("/redirect-to?url=ftp%3A%2F%2F127.0.0.1%2Fx"))
                } throws: { error in
                    (error as? CourierError)?.code == .unsupportedURL
                }
            }
        }
    }
}
