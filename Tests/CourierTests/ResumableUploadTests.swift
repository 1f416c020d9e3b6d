import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Resumable uploads (IETF draft, interop version 6) against the test server's `/resumable`: an upload cut at 60 %
/// goes on from the offset the server acknowledges.
@Suite("Resumable uploads", .timeLimit(.minutes(1)))
struct ResumableUploadTests {
    static let count = 3_000_000
    static let cut = 1_800_000

    @Test("an upload cut at 60 % asks the server's offset (HEAD) and sends the rest (PATCH)", arguments: ["file", "data"])
    func cutThenResumed(_ source: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: Self.count, seed: 51)
            var request = URLRequest(url: server.url("/resumable?cutAt=\(Self.cut)"))
            request.httpMethod = "PUT"
            let task: UploadTask
            if source == "file" {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-resumable-\(UUID())")
                try body.write(to: file)
                defer { try? FileManager.default.removeItem(at: file) }
                task = session.uploadTask(with: request, fromFile: file)
                task.resume()
                #expect(try await delegate.completion(of: task) == nil)
            } else {
                task = session.uploadTask(with: request, from: body)
                task.resume()
                #expect(try await delegate.completion(of: task) == nil)
            }
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            let answer = jsonObject(delegate.body(of: task))
            #expect(answer["length"] as? Int == Self.count)
            #expect(answer["sha256"] as? String == TestServer.sha256Hex(body))
            // What the server read in all: the body once, and what the cut connection had in flight.
            let received = try #require(answer["received"] as? Int)
            #expect(received >= Self.count && received < Self.count + 300_000, "\(received) bytes read")
            #expect(task.countOfBytesSent == Int64(Self.count))
            // The cut PUT never ended, so the server recorded only what followed (its 104 answered the PUT's
            // Upload-Draft-Interop-Version: the server offers resumption to no other request).
            let exchanges = server.requests.map { "\($0.method) \($0.uri.prefix { $0 != "?" })" }
            #expect(exchanges.count == 2, "\(exchanges)")
            #expect(exchanges.first?.hasPrefix("HEAD /resumable/") == true)
            #expect(exchanges.last?.hasPrefix("PATCH /resumable/") == true)
            let patch = try #require(server.requests.last)
            #expect(patch.header("Upload-Offset") == String(Self.cut))
            #expect(patch.header("Upload-Complete") == "?1")
            #expect(patch.bodyLength == Self.count - Self.cut)
            #expect(server.requests.first?.header("Upload-Draft-Interop-Version") == "6")
            // The delegate heard progress up to the whole body, never backwards.
            let totals = delegate.log.events.compactMap { event -> Int64? in
                if case .sent(task.taskIdentifier, _, let total, _) = event { return total }
                return nil
            }
            #expect(totals == totals.sorted() && totals.last == Int64(Self.count), "\(totals)")
        }
    }

    @Test("a server that offers no resumption: the cut upload fails as before")
    func notOffered() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let (data, _) = try await session.upload(for: request, from: TestServer.bytes(count: 100_000, seed: 52))
            #expect(jsonObject(data)["length"] as? Int == 100_000)
        }
    }
}
