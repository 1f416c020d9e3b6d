import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Resume data is a documented JSON format (docs/resume-data.md); tests edit its URL to change what the server
/// does on the next attempt.
func rewriteResumeURL(_ data: Data, _ change: (String) -> String) throws -> Data {
    var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    object["url"] = change(try #require(object["url"] as? String))
    return try JSONSerialization.data(withJSONObject: object)
}

func resumeField(_ data: Data, _ key: String) -> Any? {
    ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any])?[key]
}

@Suite("Resume data", .timeLimit(.minutes(2)))
struct ResumeTests {
    @Test("a cut body fails with resume data; resuming with Range + If-Range completes with the right bytes")
    func cutThenResume() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let count = 1_000_000
            let cut = 300_000
            var task = session.downloadTask(with: server.url("/bytes/\(count)?seed=21&cut=\(cut)"))
            task.resume()
            var error = try #require(try await delegate.completion(of: task))
            #expect(error.code == .networkConnectionLost)
            var resumeData = try #require(error.resumeData)
            #expect(resumeField(resumeData, "format") as? String == "courier-resume/1")
            #expect(resumeField(resumeData, "bytesOnDisk") as? Int == cut)
            #expect(resumeField(resumeData, "validator") as? String == "\"\(count)-21\"")
            // Each attempt gets `cut` more bytes (the route cuts every response), so it takes several resumes.
            var attempts = 0
            var offsets: [Int64] = []
            while true {
                attempts += 1
                #expect(attempts < 10)
                task = session.downloadTask(withResumeData: resumeData)
                task.resume()
                let next = try await delegate.completion(of: task)
                for case .resumed(task.taskIdentifier, let offset, let expected) in delegate.log.events {
                    offsets.append(offset)
                    #expect(expected == Int64(count))
                }
                let request = try #require(server.requests.last)
                #expect(request.header("Range") == "bytes=\(offsets.last ?? -1)-")
                #expect(request.header("If-Range") == "\"\(count)-21\"")
                // The bytes on disk were never encoded: a range continues them only in the identity coding.
                #expect(request.header("Accept-Encoding") == "identity")
                guard let next else {
                    break
                }
                error = next
                resumeData = try #require(error.resumeData, "\(error)")
            }
            #expect(offsets == [300_000, 600_000, 900_000])
            let finished = delegate.events(of: task).compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: count, seed: 21))
        }
    }

    @Test("a server that ignores Range restarts from zero: didResumeAtOffset(0), right bytes")
    func ignoredRange() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.downloadTask(with: server.url("/bytes/500000?seed=22&cut=100000"))
            task.resume()
            let resumeData = try #require(try await delegate.completion(of: task)?.resumeData)
            let edited = try rewriteResumeURL(resumeData) {
                $0.replacingOccurrences(of: "cut=100000", with: "ignoreRange=1")
            }
            let resumed = session.downloadTask(withResumeData: edited)
            resumed.resume()
            let outcome1 = try await delegate.completion(of: resumed)
            #expect(outcome1 == nil)
            let events = delegate.events(of: resumed)
            guard case .resumed(_, 0, 500_000)? = events.first else {
                Issue.record("expected didResumeAtOffset(0) first: \(events)")
                return
            }
            let finished = events.compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: 500_000, seed: 22))
        }
    }

    @Test("a changed ETag restarts from zero and never mixes versions")
    func changedEntity() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.downloadTask(with: server.url("/bytes/400000?seed=23&cut=150000"))
            task.resume()
            let resumeData = try #require(try await delegate.completion(of: task)?.resumeData)
            // The "new version" has another seed and another ETag.
            let edited = try rewriteResumeURL(resumeData) {
                $0.replacingOccurrences(of: "seed=23&cut=150000", with: "seed=24&etag=v2")
            }
            let resumed = session.downloadTask(withResumeData: edited)
            resumed.resume()
            let outcome2 = try await delegate.completion(of: resumed)
            #expect(outcome2 == nil)
            #expect(server.requests.last?.header("If-Range") == "\"400000-23\"")
            let events = delegate.events(of: resumed)
            #expect(events.contains { if case .resumed(_, 0, _) = $0 { return true } else { return false } })
            let finished = events.compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: 400_000, seed: 24))
        }
    }

    @Test("a short body (Content-Length lies) is an error, never a success")
    func shortBody() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.download(from: server.url("/bytes/100000?seed=25&lie=+5000"))
            } throws: { error in
                let error = error as? CourierError
                if let resumeData = error?.resumeData {
                    let partial = session.configuration.resumeDataDirectory
                        .appendingPathComponent(resumeField(resumeData, "file") as? String ?? "-")
                    #expect(FileManager.default.fileExists(atPath: partial.path))
                    session.discardResumeData(resumeData)
                    #expect(!FileManager.default.fileExists(atPath: partial.path))
                    return error?.code == .networkConnectionLost
                }
                return false
            }
            await #expect {
                _ = try await session.data(from: server.url("/bytes/100000?lie=+5000"))
            } throws: { error in
                (error as? CourierError)?.code == .networkConnectionLost
            }
        }
    }

    @Test(
        "a reset or a cut chunked body is an error, never a success",
        arguments: ["reset=5000", "chunked=1&cut=5000"]
    )
    func resetAndCutChunked(option: String) async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.download(from: server.url("/bytes/100000?seed=29&\(option)"))
            } throws: { error in
                // A reset may discard the head before curl reads it, so resume data is not guaranteed here.
                (error as? CourierError)?.code == .networkConnectionLost
            }
        }
    }

    /// HTTP/1.1 (RFC 9112 §6.3): a body ends at its Content-Length; bytes after it belong to no response. The
    /// response is delivered as announced, as URLSession does (curl then closes the connection, "excess found in a
    /// read", so the excess is never read as the start of another response; the test server closes it too).
    /// HTTP/2 (RFC 9113 §8.1.1): DATA beyond content-length makes the response malformed: an error, never the body
    /// (`badServerResponse` from the engine's own check; the test server's HTTP/2 codec resets the stream itself
    /// first, `networkConnectionLost`).
    @Test("bytes after a body's Content-Length: not part of it over HTTP/1.1, a malformed response over HTTP/2")
    func longBody() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let url = server.url("/bytes/1000?lie=-100&seed=3")
            if TestProtocol.current == .http2 {
                await #expect {
                    _ = try await session.data(from: url)
                } throws: { error in
                    [.badServerResponse, .networkConnectionLost].contains((error as? CourierError)?.code)
                }
            } else {
                let (data, _) = try await session.data(from: url)
                #expect(data == TestServer.bytes(count: 1000, seed: 3).prefix(900))
            }
            let (next, _) = try await session.data(from: server.url("/bytes/10?seed=4"))
            #expect(next == TestServer.bytes(count: 10, seed: 4))
        }
    }

    @Test("no strong validator: no resume data", arguments: ["noValidator=1", "weak=1"])
    func notResumable(option: String) async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.download(from: server.url("/bytes/300000?\(option)&cut=1000"))
            } throws: { error in
                let error = error as? CourierError
                return error?.code == .networkConnectionLost && error?.resumeData == nil
            }
        }
    }

    @Test("cancel(byProducingResumeData:) mid-transfer, then resume to the right bytes")
    func cancelProducingResumeData() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let count = 600_000
            // The server sends 100 kB, then nothing until the client goes: the cancel comes mid-way however late a
            // loaded machine runs it.
            let task = session.downloadTask(with: server.url("/bytes/\(count)?seed=26&hold=100000"))
            task.resume()
            try await delegate.log.wait { events in
                events.contains {
                    if case .wrote(task.taskIdentifier, _, let total, _) = $0 {
                        return total > 20_000
                    } else {
                        return false
                    }
                }
            }
            let produced = EventLog<Data?>()
            task.cancel { produced.append($0) }
            let resumeData = try #require(try await produced.wait { !$0.isEmpty }.first ?? nil)
            let outcome3 = try await delegate.completion(of: task)
            #expect(outcome3?.code == .cancelled)
            let onDisk = try #require(resumeField(resumeData, "bytesOnDisk") as? Int)
            #expect(onDisk > 0 && onDisk < count)
            let edited = try rewriteResumeURL(resumeData) {
                $0.replacingOccurrences(of: "&hold=100000", with: "")
            }
            let resumed = session.downloadTask(withResumeData: edited)
            resumed.resume()
            let outcome4 = try await delegate.completion(of: resumed)
            #expect(outcome4 == nil)
            let events = delegate.events(of: resumed)
            #expect(
                events.contains {
                    if case .resumed(_, Int64(onDisk), Int64(count)) = $0 { return true } else { return false }
                }
            )
            let finished = events.compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: count, seed: 26))
        }
    }

    @Test("resume at the very end: 416 bytes */N completes without downloading again")
    func alreadyComplete() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.downloadTask(with: server.url("/bytes/1000?seed=27&cut=400"))
            task.resume()
            let resumeData = try #require(try await delegate.completion(of: task)?.resumeData)
            // Pretend the whole entity is on disk: append the rest to the partial file.
            let directory = session.configuration.resumeDataDirectory
            let file = directory.appendingPathComponent(try #require(resumeField(resumeData, "file") as? String))
            try TestServer.bytes(count: 1000, seed: 27).write(to: file)
            var object = try #require(try JSONSerialization.jsonObject(with: resumeData) as? [String: Any])
            object["bytesOnDisk"] = 1000
            object["url"] = server.url("/bytes/1000?seed=27").absoluteString
            let edited = try JSONSerialization.data(withJSONObject: object)
            let resumed = session.downloadTask(withResumeData: edited)
            resumed.resume()
            let outcome5 = try await delegate.completion(of: resumed)
            #expect(outcome5 == nil)
            let finished = delegate.events(of: resumed).compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: 1000, seed: 27))
        }
    }

    @Test("an error status to a resumed request keeps the partial intact and yields resume data again")
    func errorStatusOnResume() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let original = server.url("/bytes/200000?seed=28").absoluteString
            let task = session.downloadTask(with: server.url("/bytes/200000?seed=28&cut=70000"))
            task.resume()
            let first = try #require(try await delegate.completion(of: task)?.resumeData)
            let broken = try rewriteResumeURL(first) { _ in server.url("/status/503").absoluteString }
            let failing = session.downloadTask(withResumeData: broken)
            failing.resume()
            let error = try #require(try await delegate.completion(of: failing))
            #expect(error.code == .badServerResponse)
            let again = try #require(error.resumeData)
            #expect(resumeField(again, "bytesOnDisk") as? Int == 70000)
            let fixed = try rewriteResumeURL(again) { _ in original }
            let resumed = session.downloadTask(withResumeData: fixed)
            resumed.resume()
            let outcome = try await delegate.completion(of: resumed)
            #expect(outcome == nil)
            let finished = delegate.events(of: resumed).compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(finished.first == TestServer.bytes(count: 200_000, seed: 28))
        }
    }

    @Test("invalid resume data fails with cannotResume")
    func invalidResumeData() async throws {
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        for data in [Data("garbage".utf8), Data(#"{"format":"courier-resume/9"}"#.utf8)] {
            await #expect {
                _ = try await session.download(resumeFrom: data)
            } throws: { error in
                (error as? CourierError)?.code == .cannotResume
            }
        }
    }
}
