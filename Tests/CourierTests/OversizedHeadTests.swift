import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Servers that send a head without end: refused at once, with memory bounded, as a bad server response that says
/// why (never "out of memory").
@Suite("Oversized response heads", .timeLimit(.minutes(1)))
struct OversizedHeadTests {
    static func failure(for head: String) async throws -> CourierError? {
        let server = try await RawServer.start(response: Data(head.utf8))
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        do {
            _ = try await session.data(from: server.baseURL.appendingPathComponent("head"))
            try await server.shutdown()
            return nil
        } catch {
            try await server.shutdown()
            return error as? CourierError
        }
    }

    @Test("one header line of 2 MiB: badServerResponse naming the line")
    func longLine() async throws {
        let head = "HTTP/1.1 200 OK\r\nX-Huge: " + String(repeating: "a", count: 2 << 20) + "\r\nContent-Length: 0\r\n\r\n"
        let error = try #require(try await Self.failure(for: head))
        #expect(error.code == .badServerResponse, "\(error)")
        #expect(error.message.contains("header line is longer than 100 KiB"), "\(error.message)")
    }

    /// A 200 with `count` fields of about 92 bytes each, then `body` (announced).
    static func head(fields count: Int, body: String) -> String {
        var head = "HTTP/1.1 200 OK\r\n"
        for index in 0..<count {
            head += "X-Field-\(index): " + String(repeating: "b", count: 80) + "\r\n"
        }
        return head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }

    @Test("20,000 header lines (2 MiB): badServerResponse naming the header section's limit")
    func manyLines() async throws {
        let error = try #require(try await Self.failure(for: Self.head(fields: 20_000, body: "")))
        #expect(error.code == .badServerResponse, "\(error)")
        #expect(error.message.contains("header section is larger than 300 KiB"), "\(error.message)")
    }

    @Test("a head just under the limit (2,500 fields, 230 KB) is taken")
    func underTheLimit() async throws {
        #expect(try await Self.failure(for: Self.head(fields: 2_500, body: "ok")) == nil)
    }

    /// libcurl 7.88 frees a handle's stored header lines at the start of its next transfer but keeps a pointer to
    /// the last one (`state.prevhead`, lib/headers.c); a response whose first field line is a continuation (obs-fold)
    /// then makes it append to freed memory: a heap corruption a server can cause on any reused handle. The engine
    /// gives every transfer a handle of its own, so such a line meets no stale pointer and fails as it should.
    @Test("a folded first field line after an earlier response on the loop: refused, no use of freed memory")
    func foldedFirstLine() async throws {
        let server = try await RawServer.start(
            responses: [
                Data("HTTP/1.1 200 OK\r\nX-First: 1\r\nContent-Length: 2\r\n\r\nok".utf8),
                Data("HTTP/1.1 204 No Content\r\n folded: 206\r\nContent-Length: 0\r\n\r\n".utf8),
            ],
            closeAfter: false
        )
        var configuration = testConfiguration()
        configuration.engineLoopCount = 1
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        _ = try await session.data(from: server.baseURL.appendingPathComponent("first"))
        for _ in 0..<3 {
            do {
                _ = try await session.data(from: server.baseURL.appendingPathComponent("folded"))
            } catch {
                #expect((error as? CourierError)?.code != nil)
            }
        }
        try await server.shutdown()
    }
}
