import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Content codings are decoded transparently, as Apple's URLSession does: data, downloads and the async
/// conveniences get decoded bytes; counters and metrics say which figure is on the wire and which is decoded.
@Suite("Content codings", .blockingWaits, .timeLimit(.minutes(2)))
struct ContentCodingTests {
    static let codings = ["gzip", "deflate", "br", "zstd"]
    static let length = 120_000

    @Test("a data task offers every coding and delivers decoded bytes", arguments: Self.codings)
    func dataTask(coding: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let text = TestServer.text(count: Self.length)
            let wire = try #require(TestServer.encode(text, coding: coding))
            let task = session.dataTask(with: server.url("/encoded/\(coding)/\(Self.length)"))
            task.resume()
            let outcome = try await delegate.completion(of: task)
            #expect(outcome == nil)
            #expect(delegate.body(of: task) == text)
            let response = try #require(task.response as? HTTPURLResponse)
            #expect(response.header("Content-Encoding") == coding)
            #expect(response.expectedContentLength == Int64(wire.count))
            #expect(task.countOfBytesReceived == Int64(text.count))
            #expect(task.countOfBytesExpectedToReceive == SessionTask.transferSizeUnknown)
            let offered = try #require(server.requests.last?.header("Accept-Encoding"))
            for name in Self.codings {
                #expect(offered.contains(name), "Accept-Encoding: \(offered)")
            }
            let transaction = try #require(delegate.metrics(of: task).first?.transactionMetrics.last)
            #expect(transaction.countOfResponseBodyBytesReceived == Int64(wire.count))
            #expect(transaction.countOfResponseBodyBytesAfterDecoding == Int64(text.count))
        }
    }

    @Test("a download task writes decoded bytes; progress has no expected total", arguments: Self.codings)
    func download(coding: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let text = TestServer.text(count: 2_000_000)
            let task = session.downloadTask(with: server.url("/encoded/\(coding)/2000000"))
            task.resume()
            let outcome = try await delegate.completion(of: task)
            #expect(outcome == nil)
            #expect(delegate.downloadedFiles(of: task) == [text])
            let progress = delegate.events(of: task).compactMap { event -> (Int64, Int64)? in
                if case .wrote(_, _, let total, let expected) = event { return (total, expected) }
                return nil
            }
            #expect(progress.last?.0 == Int64(text.count))
            #expect(progress.allSatisfy { $0.1 == SessionTask.transferSizeUnknown })
        }
    }

    @Test("the async conveniences decode, over HTTP/2 with TLS too")
    func asyncConveniences() async throws {
        try await withServer(.init(tls: true)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(try #require(server.certificateAuthority?.pem))
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let text = TestServer.text(count: Self.length)
            for coding in Self.codings {
                let (data, _) = try await session.data(from: server.url("/encoded/\(coding)/\(Self.length)"))
                #expect(data == text, "\(coding)")
                let (file, _) = try await session.download(for: URLRequest(url: server.url("/encoded/\(coding)/5000")))
                #expect(try Data(contentsOf: file) == TestServer.text(count: 5000), "\(coding)")
                try? FileManager.default.removeItem(at: file)
            }
            #expect(server.requests.allSatisfy { $0.httpVersion == "2" })
        }
    }

    @Test("a request's own Accept-Encoding is sent as given, and what comes back is still decoded")
    func ownAcceptEncoding() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/encoded/br/10000"))
            request.setValue("br", forHTTPHeaderField: "Accept-Encoding")
            let (data, _) = try await session.data(for: request)
            #expect(data == TestServer.text(count: 10000))
            #expect(server.requests.last?.header("Accept-Encoding") == "br")
        }
    }

    @Test("a corrupt body fails with cannotDecodeContentData and nothing is delivered as success",
          arguments: ["gzip", "deflate", "zstd"])
    func corrupt(coding: String) async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let url = server.url("/encoded/\(coding)/\(Self.length)?corrupt=1")
            await #expect {
                _ = try await session.data(from: url)
            } throws: { error in
                CourierError.Code.of(error) == .cannotDecodeContentData
            }
            let outcome = await withCheckedContinuation { continuation in
                session.dataTask(with: url) { data, response, error in
                    continuation.resume(returning: (data, CourierError.Code.of(error)))
                }.resume()
            }
            #expect(outcome.0 == nil)
            #expect(outcome.1 == .cannotDecodeContentData)
        }
    }

    @Test("a request's own Accept-Encoding is not replayed by a resume: the range asks for identity")
    func resumeAsksForIdentity() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/bytes/400000?seed=5&cut=100000"))
            request.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
            let first = session.downloadTask(with: request)
            first.resume()
            let failure = try #require(try await delegate.completion(of: first))
            let resumed = session.downloadTask(withResumeData: try #require(failure.resumeData))
            resumed.resume()
            _ = try await delegate.completion(of: resumed)
            #expect(server.requests.last?.header("Range") == "bytes=100000-")
            #expect(server.requests.last?.header("Accept-Encoding") == "identity")
        }
    }

    @Test("an encoded download that fails or is cancelled has no resume data")
    func noResumeOfEncoded() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let text = TestServer.text(count: 3_000_000)
            let wire = try #require(TestServer.encode(text, coding: "gzip"))
            let cut = session.downloadTask(with: server.url("/encoded/gzip/3000000?cut=\(wire.count / 2)"))
            cut.resume()
            let error = try #require(try await delegate.completion(of: cut))
            #expect(error.code == .networkConnectionLost)
            #expect(error.resumeData == nil)

            let slow = session.downloadTask(
                // 40 pieces 100 ms apart: still running when cancelled, even on a loaded machine (at 20 pieces 50 ms
                // apart it once finished between its first written bytes and the cancel).
                with: server.url("/encoded/gzip/3000000?trickle=\(wire.count / 40)&interval=100")
            )
            slow.resume()
            _ = try await delegate.log.wait(timeout: .seconds(10), "some bytes written") { events in
                events.contains { if case .wrote(slow.taskIdentifier, _, _, _) = $0 { true } else { false } }
            }
            let resumeData = await withCheckedContinuation { continuation in
                slow.cancel(byProducingResumeData: { continuation.resume(returning: $0) })
            }
            #expect(resumeData == nil)
            let outcome = try await delegate.completion(of: slow)
            #expect(outcome?.code == .cancelled)
        }
    }
}
