import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Redirects and asked-for responses whose end arrives with (or before) their head: an empty body, a chunked body
/// of length zero, HEAD, 204 and 304. Each must still wait for its decision (docs/response-path.md). Challenges
/// with such bodies are in ``AuthenticationTests``.
@Suite("Responses without a body", .blockingWaits, .timeLimit(.minutes(2)))
struct BodilessResponseTests {
    /// A relative chain of `/redirect-to` hops, the first hop first, each answered with `shape`'s body, ending at
    /// `final`. `status` applies to every hop.
    static func chain(_ shapes: [String], to final: String, status: Int = 302) -> String {
        var target = final
        for shape in shapes.reversed() {
            let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
            target = "/redirect-to?url=\(encoded)&status=\(status)&body=\(shape)"
        }
        return target
    }

    @Test(
        "redirect chains are followed whatever the hops' bodies, with a delegate asked at every hop",
        arguments: [
            ["empty", "empty", "empty"],
            ["chunked-empty", "chunked-empty"],
            ["route", "empty", "empty"],
            ["empty", "route", "chunked-empty"],
        ]
    )
    func chains(shapes: [String]) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url(Self.chain(shapes, to: "/bytes/300?seed=4")))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(delegate.body(of: task) == TestServer.bytes(count: 300, seed: 4))
            let redirects = delegate.events(of: task).filter { if case .redirect = $0 { true } else { false } }
            #expect(redirects.count == shapes.count)
            #expect(task.currentRequest?.url?.path == "/bytes/300")
        }
    }

    @Test("an absolute Location with an empty body, to a download task and through async data without a delegate")
    func absoluteAndWithoutDelegate() async throws {
        try await withServer { server in
            let absolute = server.url("/bytes/5000?seed=2").absoluteString
            let path = Self.chain(["empty", "chunked-empty"], to: absolute)
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let download = session.downloadTask(with: server.url(path))
            download.resume()
            let outcome = try await delegate.completion(of: download)
            #expect(outcome == nil)
            #expect(delegate.downloadedFiles(of: download) == [TestServer.bytes(count: 5000, seed: 2)])

            let plain = Session(configuration: testConfiguration())
            defer { plain.invalidateAndCancel() }
            let (data, response) = try await plain.data(from: server.url(path))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(data == TestServer.bytes(count: 5000, seed: 2))
        }
    }

    @Test("303 with an empty body after a POST continues as a GET without the body")
    func seeOtherAfterPost() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/redirect-to?url=/echo&status=303&body=empty"))
            request.httpMethod = "POST"
            request.httpBody = Data("payload".utf8)
            let task = session.dataTask(with: request)
            task.resume()
            let outcome = try await delegate.completion(of: task)
            #expect(outcome == nil)
            #expect(server.requests.last?.path == "/echo")
            #expect(server.requests.last?.method == "GET")
            #expect(server.requests.last?.bodyLength == 0)
        }
    }

    @Test("HEAD, 204 and 304 reach the disposition and complete once it is given", arguments: [
        ("HEAD", "/bytes/1000", 200), ("GET", "/status/204", 204), ("GET", "/status/304", 304),
        ("HEAD", Self.chain(["empty"], to: "/bytes/1000"), 200),
    ])
    func disposition(method: String, path: String, status: Int) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url(path))
            request.httpMethod = method
            let task = session.dataTask(with: request)
            task.resume()
            let outcome = try await delegate.completion(of: task)
            #expect(outcome == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == status)
            let events = delegate.events(of: task)
            let responses = events.filter { if case .response = $0 { true } else { false } }
            #expect(responses.count == 1)
            #expect(delegate.body(of: task).isEmpty)
        }
    }

    @Test("a cancel disposition on a 204 cancels; becomeDownload on a 204 delivers an empty file")
    func dispositionChoices() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script { $0.disposition = { _ in .cancel } }
            let cancelled = session.dataTask(with: server.url("/status/204"))
            cancelled.resume()
            let outcome = try await delegate.completion(of: cancelled)
            #expect(outcome?.code == .cancelled)

            delegate.script { $0.disposition = { _ in .becomeDownload } }
            let converted = session.dataTask(with: server.url("/status/204"))
            converted.resume()
            let became = try await delegate.log.wait(timeout: .seconds(10), "becameDownload") { events in
                events.contains { if case .becameDownload(converted.taskIdentifier, _) = $0 { true } else { false } }
            }
            let downloadID = became.compactMap { event -> Int? in
                if case .becameDownload(converted.taskIdentifier, let id) = event { return id }
                return nil
            }.first
            let id = try #require(downloadID)
            _ = try await delegate.log.wait(timeout: .seconds(10), "download completion") { events in
                events.contains { if case .completed(id, nil) = $0 { true } else { false } }
            }
            let files = delegate.log.events.compactMap { event -> Data? in
                if case .finished(id, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(files == [Data()])
        }
    }

    @Test("cancel while the delegate decides on an empty-bodied redirect: cancelled once, the target never asked")
    func cancelRacingHeldRedirect() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url(Self.chain(["empty"], to: "/bytes/10")))
            delegate.script {
                $0.redirect = { _, request in
                    task.cancel()
                    return request
                }
            }
            task.resume()
            let outcome = try await delegate.completion(of: task)
            #expect(outcome?.code == .cancelled)
            try await Task.sleep(for: .milliseconds(100))
            let completions = delegate.events(of: task).filter { if case .completed = $0 { true } else { false } }
            #expect(completions.count == 1)
            #expect(!server.requests.contains { $0.path == "/bytes/10" })
        }
    }
}
