import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Segmented downloads against the test server: one file over several ranged connections, a server that does not
/// serve ranges, and resume data that keeps each segment.
@Suite("Segmented downloads", .timeLimit(.minutes(1)))
struct SegmentedDownloadTests {
    static let count = 8 * 1024 * 1024

    static func ranges(_ server: TestServer, _ prefix: String) -> [String?] {
        server.requests.filter { $0.uri.hasPrefix(prefix) }.map { $0.header("Range") }
    }

    @Test("an 8 MiB file over 4 connections: one plain GET, three ranged ones with If-Range; the SHA-256 is right")
    func fourSegments() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: Self.count, seed: 41)
            let task = session.downloadTask(with: server.url("/bytes/\(Self.count)?seed=41"))
            task.maximumSegments = 4
            task.expectedChecksum = Checksum("sha-256=" + TestServer.sha256Hex(body))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect(delegate.downloadedFiles(of: task) == [body])
            let ranges = Self.ranges(server, "/bytes/\(Self.count)?seed=41")
            #expect(ranges.count == 4)
            #expect(ranges.first == .some(nil))
            #expect(
                Set(ranges.dropFirst().compactMap { $0 }) == [
                    "bytes=2097152-4194303", "bytes=4194304-6291455", "bytes=6291456-8388607",
                ])
            let ranged = server.requests.filter { $0.header("Range") != nil }
            #expect(ranged.allSatisfy { $0.header("If-Range") == "\"\(Self.count)-41\"" })
            // Progress adds up to the whole file.
            let totals = delegate.log.events.compactMap { event -> Int64? in
                if case .wrote(task.taskIdentifier, _, let total, _) = event { return total }
                return nil
            }
            #expect(totals.last == Int64(Self.count))
        }
    }

    // ignoreRange=1&rangeDelay=300: the answers to the ranges (the whole entity) come after the first transfer has
    // passed its segment's end, which must not be cut then (seen over HTTP/2, where all of it is quick).
    @Test(
        "a server that does not serve ranges keeps one connection",
        arguments: ["noValidator=1", "ignoreRange=1", "ignoreRange=1&rangeDelay=300"]
    )
    func noRanges(_ option: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let path = "/bytes/\(Self.count)?seed=42&\(option)"
            let task = session.downloadTask(with: server.url(path))
            task.maximumSegments = 8
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect(delegate.downloadedFiles(of: task) == [TestServer.bytes(count: Self.count, seed: 42)])
            #expect(server.requests.filter { $0.uri == path && $0.header("Range") == nil }.count == 1)
        }
    }

    @Test("cancelled mid-way, the resume data keeps each segment; resuming asks each for the rest only")
    func resumeEachSegment() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.maximumSegmentsPerDownload = 4
            // Held segments are idle until the cancel: none may time out first (CI, under the whole suite's load, saw
            // the task end with timedOut, and no resume data, after the 20 s of `testConfiguration()`).
            configuration.timeoutIntervalForRequest = 120
            let (session, delegate) = makeRecordingSession(configuration)
            defer { session.invalidateAndCancel() }
            // Each response sends 200 kB, then nothing until the client goes: once 600 kB are in, every segment has
            // some bytes and none is done, however late a loaded machine runs the cancel (trickled bodies ended
            // first under the whole suite's load on a slower machine).
            let path = "/bytes/\(Self.count)?seed=43&hold=200000"
            let task = session.downloadTask(with: server.url(path))
            task.resume()
            _ = try await delegate.log.wait(timeout: .seconds(30), "600 kB over four connections") { events in
                let written = events.compactMap { event -> Int64? in
                    if case .wrote(task.taskIdentifier, _, let total, _) = event { return total }
                    return nil
                }
                return (written.last ?? 0) > 600_000 && server.requests.filter { $0.uri == path }.count == 4
            }
            try await Task.sleep(for: .milliseconds(300))
            let resumeData = try await withCheckedThrowingContinuation { continuation in
                task.cancel { data in continuation.resume(returning: data) }
            }
            let data = try #require(
                resumeData,
                "no resume data; the task's last events: \(delegate.events(of: task).suffix(4))"
            )
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let segments = try #require(object["segments"] as? [[String: Any]])
            #expect(segments.count == 4)
            let done = segments.compactMap { $0["done"] as? Int }
            #expect(done.count == 4 && done.filter { $0 > 0 }.count >= 2, "\(segments)")

            // The rest from a server that holds nothing back.
            let whole = "/bytes/\(Self.count)?seed=43"
            let edited = try rewriteResumeURL(data) { $0.replacingOccurrences(of: path, with: whole) }
            let resumed = session.downloadTask(withResumeData: edited)
            resumed.resume()
            let error = try await delegate.completion(of: resumed, timeout: .seconds(50))
            #expect(error == nil)
            let file = try #require(delegate.downloadedFiles(of: resumed).first ?? nil)
            #expect(TestServer.sha256Hex(file) == TestServer.sha256Hex(TestServer.bytes(count: Self.count, seed: 43)))
            // The second round: one ranged request per segment, each from where it stopped.
            let second = server.requests.filter { $0.uri == whole }.map { $0.header("Range") }
            #expect(second.count == 4, "\(second)")
            let starts = segments.compactMap { segment -> String? in
                guard let start = segment["start"] as? Int, let done = segment["done"] as? Int else { return nil }
                return "bytes=\(start + done)-"
            }
            for start in starts {
                #expect(second.contains { $0?.hasPrefix(start) == true }, "\(start) not in \(second)")
            }
        }
    }
}
