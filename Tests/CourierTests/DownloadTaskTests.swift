import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Download tasks", .blockingWaits, .timeLimit(.minutes(1)))
struct DownloadTaskTests {
    @Test("delegate: wrote* then finished, file valid during the call and deleted after, then completion")
    func delegateDownload() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let count = 2_000_000
            let task = session.downloadTask(with: server.url("/bytes/\(count)?seed=5"))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            let events = delegate.events(of: task)
            let kinds = events.map { event -> String in
                switch event {
                case .wrote: "wrote"
                case .finished: "finished"
                case .metrics: "metrics"
                case .completed: "completed"
                default: "other:\(event)"
                }
            }
            // wrote* finished metrics completed
            let tail = Array(kinds.drop { $0 == "wrote" })
            #expect(tail == ["finished", "metrics", "completed"], "\(kinds)")
            #expect(kinds.first == "wrote")
            guard
                case .finished(_, let path, let bytes, _)? = events.first(where: {
                    if case .finished = $0 { return true } else { return false }
                })
            else {
                Issue.record("no finished event")
                return
            }
            #expect(bytes == TestServer.bytes(count: count, seed: 5))
            #expect(!FileManager.default.fileExists(atPath: path), "the staging file must be gone after the call")
            // Progress never goes backwards and ends at the full size.
            var last: Int64 = 0
            for case .wrote(_, let delta, let total, let expected) in events {
                #expect(total >= last)
                #expect(delta > 0)
                #expect(expected == Int64(count))
                last = total
            }
            #expect(last == Int64(count))
            #expect(task.countOfBytesReceived == Int64(count))
        }
    }

    @Test("earliestBeginDate has no effect outside a background session, as on iOS: the task begins at once")
    func earliestBeginDateInProcess() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let done = AsyncStream<Data?>.makeStream()
            let task = session.downloadTask(with: server.url("/bytes/2000?seed=1")) { file, _, _ in
                done.continuation.yield(file.flatMap { FileManager.default.contents(atPath: $0.path) })
            }
            task.earliestBeginDate = Date().addingTimeInterval(3600)
            task.resume()
            var iterator = done.stream.makeAsyncIterator()
            #expect(await iterator.next() == TestServer.bytes(count: 2000, seed: 1))
            #expect(task.earliestBeginDate != nil)
        }
    }

    @Test("async download(for:) hands over a file the caller owns, in the configuration's temporary directory")
    func asyncDownload() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("courier-own-temporary-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            configuration.temporaryDirectory = directory
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let (file, response) = try await session.download(for: URLRequest(url: server.url("/bytes/70000?seed=9")))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(try Data(contentsOf: file) == TestServer.bytes(count: 70000, seed: 9))
            #expect(file.deletingLastPathComponent().standardizedFileURL.path == directory.standardizedFileURL.path)
        }
    }

    @Test("completion-handler download: the file is readable in the handler")
    func handlerDownload() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let log = EventLog<Data?>()
            let task = session.downloadTask(with: server.url("/bytes/1234?seed=2")) { location, _, error in
                #expect(error == nil)
                log.append(location.flatMap { try? Data(contentsOf: $0) })
            }
            task.resume()
            let result = try await log.wait { !$0.isEmpty }
            #expect(result.first! == TestServer.bytes(count: 1234, seed: 2))
        }
    }

    @Test("a data task can become a download task")
    func becomeDownload() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script { $0.disposition = { _ in .becomeDownload } }
            let task = session.dataTask(with: server.url("/bytes/50000?seed=8"))
            task.resume()
            let events = try await delegate.log.wait { events in
                events.contains { if case .completed = $0 { return true } else { return false } }
            }
            guard
                let became = events.compactMap({ event -> Int? in
                    if case .becameDownload(task.taskIdentifier, let download) = event { return download }
                    return nil
                }).first
            else {
                Issue.record("no didBecome: \(events)")
                return
            }
            let finished = events.compactMap { event -> Data? in
                if case .finished(became, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: 50000, seed: 8))
            #expect(events.contains { if case .completed(became, nil) = $0 { return true } else { return false } })
            #expect(
                !events.contains {
                    if case .completed(task.taskIdentifier, _) = $0 { return true } else { return false }
                }
            )
            #expect(
                !events.contains { if case .data(task.taskIdentifier, _) = $0 { return true } else { return false } }
            )
        }
    }

    @Test("response disposition .cancel ends the task cancelled")
    func dispositionCancel() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            delegate.script { $0.disposition = { _ in .cancel } }
            let task = session.dataTask(with: server.url("/bytes/50000"))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error?.code == .cancelled)
            #expect(delegate.body(of: task).isEmpty)
        }
    }
}

@Suite("Upload tasks", .blockingWaits, .timeLimit(.minutes(1)))
struct UploadTaskTests {
    @Test("upload from Data: the server sees every byte; progress reported")
    func uploadData() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: 3_000_000, seed: 11)
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let task = session.uploadTask(with: request, from: body)
            #expect(task.countOfBytesExpectedToSend == 3_000_000)
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            let reply = jsonObject(delegate.body(of: task))
            #expect(reply["length"] as? Int == 3_000_000)
            #expect(reply["method"] as? String == "PUT")
            #expect(task.countOfBytesSent == 3_000_000)
            let sent = delegate.events(of: task).compactMap { event -> Int64? in
                if case .sent(_, _, let total, _) = event { return total }
                return nil
            }
            #expect(sent.last == 3_000_000)
            #expect(sent == sent.sorted())
        }
    }

    @Test("upload from a file (async), and the server's digest matches")
    func uploadFile() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: 1_500_000, seed: 12)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID()).bin")
            try body.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            let (data, _) = try await session.upload(for: request, fromFile: file)
            let reply = jsonObject(data)
            #expect(reply["length"] as? Int == 1_500_000)
            let (data2, _) = try await session.upload(for: request, from: body)
            #expect(jsonObject(data2)["sha256"] as? String == reply["sha256"] as? String)
        }
    }

    @Test("an upload body shared by several uploads is let go once they end, also when one is cancelled")
    func uploadBodyIsReleased() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let freed = LockedValue(false)
            let count = 2_000_000
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
            bytes.initializeMemory(as: UInt8.self, repeating: 7, count: count)
            var body: Data? = Data(bytesNoCopy: bytes, count: count, deallocator: .custom { pointer, _ in
                pointer.deallocate()
                freed.withLock { $0 = true }
            })
            var put = URLRequest(url: server.url("/upload"))
            put.httpMethod = "PUT"
            let request = put
            do {
                // One storage in several uploads at once; one of them is cancelled while the server waits.
                let payload = body!
                var slow = URLRequest(url: server.url("/upload?delay=30000"))
                slow.httpMethod = "PUT"
                let cancelled = session.uploadTask(with: slow, from: payload)
                cancelled.resume()
                async let first = session.upload(for: request, from: payload)
                async let second = session.upload(for: request, from: payload)
                let replies = try await [first.0, second.0]
                #expect(replies.allSatisfy { jsonObject($0)["length"] as? Int == count })
                let digest = jsonObject(replies[0])["sha256"] as? String
                #expect(replies.allSatisfy { jsonObject($0)["sha256"] as? String == digest })
                cancelled.cancel()
            }
            body = nil
            try await eventually(.seconds(10), "the body's storage is freed") { freed.withLock { $0 } }
        }
    }

    @Test("bodies the engine copies and bodies it borrows (16 KiB and up) arrive byte for byte, changed or not")
    func copiedAndBorrowedBodies() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var put = URLRequest(url: server.url("/upload"))
            put.httpMethod = "PUT"
            let source = TestServer.bytes(count: 1_048_576 + 100, seed: 21)
            // Inline (≤ 14 bytes), either side of the borrowing threshold, and slices not starting at index 0.
            let bodies: [Data] = [
                Data([42]), source.prefix(14), source.prefix(15), source.prefix(16_383), source.prefix(16_384),
                source[3..<(3 + 16_385)], source.suffix(1_048_576 + 97), Data(source[100...]),
            ]
            for body in bodies {
                let (reply, _) = try await session.upload(for: put, from: body)
                #expect(jsonObject(reply)["length"] as? Int == body.count)
                #expect(jsonObject(reply)["sha256"] as? String == TestServer.sha256Hex(body), "\(body.count) bytes")
            }
            // The caller keeps changing its own copy while the engine reads the one it was handed.
            let (recording, delegate) = makeRecordingSession()
            defer { recording.invalidateAndCancel() }
            var changing = source
            let expected = TestServer.sha256Hex(changing)
            let task = recording.uploadTask(with: put, from: changing)
            task.resume()
            for index in stride(from: changing.startIndex, to: changing.endIndex, by: 4096) {
                changing[index] &+= 1
            }
            #expect(try await delegate.completion(of: task) == nil)
            #expect(jsonObject(delegate.body(of: task))["sha256"] as? String == expected)
            #expect(TestServer.sha256Hex(changing) != expected)
        }
    }

    @Test("a missing upload file fails clearly")
    func missingFile() async throws {
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        let request = URLRequest(url: URL(string: "http://127.0.0.1:9/upload")!)
        await #expect {
            _ = try await session.upload(for: request, fromFile: URL(fileURLWithPath: "/nonexistent/courier/file"))
        } throws: { error in
            (error as? CourierError)?.code == .fileDoesNotExist
        }
    }
}

@Suite("Download tasks suspended and resumed", .blockingWaits, .timeLimit(.minutes(1)))
struct SuspendResumeTests {
    /// libcurl 7.88 keeps the header lines that arrive while a transfer is paused and hands them to the header
    /// callback in one call when it resumes: the engine must still see the head end before the body (it once wrote
    /// the body at offset -1 and failed with EINVAL, in 3 to 6 of these 12 rounds).
    @Test(
        "suspend() and resume() 400 times, 0 to 400 µs apart, as the response arrives: the download ends whole",
        arguments: 0..<12
    )
    func suspendResumeStorm(round: Int) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let count = 1_000_000
            let task = session.downloadTask(with: server.url("/bytes/\(count)?seed=\(round)&trickle=65536&interval=5"))
            task.resume()
            for index in 0..<400 {
                task.suspend()
                usleep(UInt32((index * 37 + round * 11) % 400))
                task.resume()
                usleep(UInt32((index * 53 + round * 7) % 300))
            }
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            let finished = delegate.events(of: task).compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { bytes } else { nil }
            }
            #expect(finished == [TestServer.bytes(count: count, seed: round)])
        }
    }
}
