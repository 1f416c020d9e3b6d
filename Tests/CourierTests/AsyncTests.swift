import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Async conveniences", .blockingWaits, .timeLimit(.minutes(1)))
struct AsyncTests {
    @Test("Swift task cancellation cancels the transfer")
    func taskCancellation() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let work = Task {
                try await session.data(from: server.url("/bytes/10000000?trickle=1000&interval=10"))
            }
            // The unstructured task runs on the global pool, which the whole suite's load can keep busy for seconds.
            try await eventually(.seconds(30), "the request") { !server.requests.isEmpty }
            work.cancel()
            let result = try await withTimeout { await work.result }
            #expect(throws: CourierError.self) { try result.get() }
            if case .failure(let error) = result {
                #expect((error as? CourierError)?.code == .cancelled)
            }
            try await eventually { session.allTasks.isEmpty }
        }
    }

    @Test("bytes(for:) streams the body in order")
    func bytes() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (bytes, response) = try await session.bytes(for: URLRequest(url: server.url("/bytes/300000?seed=41")))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            var collected = Data()
            for try await byte in bytes {
                collected.append(byte)
            }
            #expect(collected == TestServer.bytes(count: 300_000, seed: 41))
        }
    }

    @Test("bytes(for:) backpressure: a consumer that stops pauses the transfer; memory stays bounded")
    func backpressure() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            // Twice the bound the paused transfer must stay under: enough to show it paused, and cheap to check
            // byte for byte in a debug build on a loaded machine (64 MiB ran past the minute once in CI).
            let count = 32 << 20
            let (bytes, _) = try await session.bytes(for: URLRequest(url: server.url("/bytes/\(count)?seed=42")))
            var iterator = bytes.makeAsyncIterator()
            var first = Data()
            for _ in 0..<10 {
                first.append(try #require(try await iterator.next()))
            }
            // Stop consuming: the received count must stop growing well below the body size.
            var previous: Int64 = -1
            var stable = 0
            let deadline = ContinuousClock.now + .seconds(15)
            while stable < 5 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                let now = bytes.task.countOfBytesReceived
                stable = now == previous ? stable + 1 : 0
                previous = now
            }
            #expect(stable >= 5, "the transfer did not pause")
            #expect(previous < 16 << 20, "received \(previous) bytes without consumption")
            // Consume the rest, in chunks, and check every byte.
            var collected = first
            while let chunk = try await iterator.nextChunk() {
                collected.append(chunk)
            }
            #expect(collected.count == count)
            #expect(collected == TestServer.bytes(count: count, seed: 42))
        }
    }

    @Test("bytes(for:) throws the transfer's error")
    func bytesError() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (bytes, _) = try await session.bytes(for: URLRequest(url: server.url("/bytes/100000?cut=5000")))
            await #expect {
                for try await _ in bytes {}
            } throws: { error in
                (error as? CourierError)?.code == .networkConnectionLost
            }
        }
    }

    @Test("upload(for:from:) and download(from:) together, many at once")
    func concurrent() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        var request = URLRequest(url: server.url("/upload"))
                        request.httpMethod = "POST"
                        let (data, _) = try await session.upload(
                            for: request,
                            from: TestServer.bytes(count: 10_000 + index, seed: index)
                        )
                        #expect(jsonObject(data)["length"] as? Int == 10_000 + index)
                    }
                    group.addTask {
                        let (file, _) = try await session.download(
                            from: server.url("/bytes/\(20_000 + index)?seed=\(index)")
                        )
                        defer { try? FileManager.default.removeItem(at: file) }
                        #expect(try Data(contentsOf: file) == TestServer.bytes(count: 20_000 + index, seed: index))
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}

@Suite("Bad input", .blockingWaits, .timeLimit(.minutes(1)))
struct BadInputTests {
    @Test(
        "malformed and unsupported URLs",
        arguments: [
            ("ftp://127.0.0.1/file", CourierError.Code.unsupportedURL),
            ("file:///etc/passwd", CourierError.Code.unsupportedURL),
            ("http:///no-host", CourierError.Code.badURL),
            ("relative/path", CourierError.Code.badURL),
        ]
    )
    func badURL(text: String, code: CourierError.Code) async throws {
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: text))
        await #expect {
            _ = try await session.data(from: url)
        } throws: { error in
            (error as? CourierError)?.code == code
        }
        await #expect {
            _ = try await session.download(from: url)
        } throws: { error in
            (error as? CourierError)?.code == code
        }
    }

    @Test("nobody listening: cannotConnectToHost")
    func refused() async throws {
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        await #expect {
            _ = try await session.data(from: URL(string: "http://127.0.0.1:1/")!)
        } throws: { error in
            (error as? CourierError)?.code == .cannotConnectToHost
        }
    }

    @Test("a server sending garbage: badServerResponse")
    func garbage() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.data(from: server.url("/garbage"))
            } throws: { error in
                [.badServerResponse, .networkConnectionLost].contains((error as? CourierError)?.code)
            }
        }
    }

    @Test("conflicting Content-Length headers: badServerResponse")
    func conflictingLengths() async throws {
        let raw = try await RawServer.start(
            response: Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!".utf8)
        )
        defer { Task { try? await raw.shutdown() } }
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        await #expect {
            _ = try await session.data(from: raw.url("/x"))
        } throws: { error in
            (error as? CourierError)?.code == .badServerResponse
        }
    }

    @Test("download(from:) stages in and returns a file of the configuration's temporary directory")
    func stagesInConfiguredDirectory() async throws {
        try await withServer { server in
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("courier-staging-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = testConfiguration()
            configuration.temporaryDirectory = directory
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let (file, _) = try await session.download(from: server.url("/bytes/1000"))
            #expect(file.deletingLastPathComponent().standardizedFileURL.path == directory.standardizedFileURL.path)
            #expect(try Data(contentsOf: file) == TestServer.bytes(count: 1000, seed: 0))
        }
    }

    @Test("an unwritable staging directory: cannotCreateFile")
    func unwritable() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.temporaryDirectory = URL(fileURLWithPath: "/proc/courier-cannot-write-here")
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.download(from: server.url("/bytes/10"))
            } throws: { error in
                (error as? CourierError)?.code == .cannotCreateFile
            }
        }
    }

    @Test("errors describe themselves")
    func description() {
        let error = CourierError(.timedOut, "idle", curlCode: 28, failingURL: URL(string: "http://x/"))
        #expect(error.description.contains("timedOut"))
        #expect(error.description.contains("curl 28"))
        #expect(CourierError.Code.cancelled.rawValue == -999)
        #expect(CourierError.Code.serverCertificateUntrusted.rawValue == -1202)
    }
}

@Suite("Metrics", .blockingWaits, .timeLimit(.minutes(1)))
struct MetricsTests {
    @Test("one transaction per exchange with curl's timings and addresses")
    func metrics() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            // The server waits 50 ms before answering: the task interval must span at least that.
            let task = session.dataTask(with: server.url("/bytes/10000?delay=50"))
            let before = Date()
            task.resume()
            try await delegate.completion(of: task)
            let after = Date()
            let metrics = try #require(
                delegate.events(of: task).compactMap { event -> SessionTaskMetrics? in
                    if case .metrics(_, let metrics) = event { return metrics }
                    return nil
                }.first
            )
            let transaction = try #require(metrics.transactionMetrics.first)
            #expect(metrics.transactionMetrics.count == 1)
            #expect(transaction.networkProtocolName == (TestProtocol.current == .http2 ? "h2" : "http/1.1"))
            #expect(transaction.remoteAddress == "127.0.0.1")
            #expect(transaction.remotePort == server.port)
            #expect(transaction.countOfResponseBodyBytesReceived == 10000)
            let start = try #require(transaction.fetchStartDate)
            let end = try #require(transaction.responseEndDate)
            #expect(end >= start)
            #expect((transaction.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(metrics.taskInterval.start >= before)
            #expect(metrics.taskInterval.end <= after)
            #expect(metrics.taskInterval.duration >= 0.05)
            #expect(metrics.taskInterval.start <= start)
            #expect(metrics.taskInterval.end >= end)
        }
    }
}
