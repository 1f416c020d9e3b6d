import CourierTestSupport
import Foundation
import Testing

@Suite("RawServer scripted responses")
struct RawServerTests {
    @Test("a scripted valid response reaches the client byte for byte; the head is recorded")
    func validResponse() async throws {
        let raw = try await RawServer.start(response: Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Raw: yes\r\n\r\nhello".utf8))
        let transfer = try await Curl.fetch(raw.url("/x"))
        let heads = raw.requestHeads
        try await raw.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.text == "hello")
        #expect(transfer.header("X-Raw") == "yes")
        #expect(heads.count == 1)
        #expect(heads.first?.hasPrefix("GET /x HTTP/1.1\r\n") == true)
    }

    @Test("garbage instead of a response makes the client fail")
    func garbage() async throws {
        let raw = try await RawServer.start(response: Data([0x00, 0x01, 0x02, 0xFF, 0x0D, 0x0A, 0x0D, 0x0A]))
        let transfer = try await Curl.fetch(raw.url("/"))
        try await raw.shutdown()

        #expect(transfer.exitCode != 0)
    }

    @Test("a body shorter than its Content-Length is a partial file (18)")
    func shortBody() async throws {
        let raw = try await RawServer.start(response: Data("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nonly a bit".utf8))
        let transfer = try await Curl.fetch(raw.url("/"))
        try await raw.shutdown()

        #expect(transfer.exitCode == 18)
        #expect(transfer.text == "only a bit")
    }

    @Test("Content-Length plus chunked: the bytes arrive as scripted and curl decodes the chunks")
    func contentLengthPlusChunked() async throws {
        let raw = try await RawServer.start(
            response: Data(
                "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".utf8
            )
        )
        let transfer = try await Curl.fetch(raw.url("/"))
        try await raw.shutdown()

        #expect(transfer.header("Content-Length") == "100")
        #expect(transfer.header("Transfer-Encoding") == "chunked")
        #expect(transfer.text == "hello")
    }

    @Test("a body longer than announced: curl keeps only the announced bytes")
    func longerBody() async throws {
        let raw = try await RawServer.start(response: Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello world".utf8))
        let transfer = try await Curl.fetch(raw.url("/"))
        try await raw.shutdown()

        #expect(transfer.text == "hello")
    }

    @Test("responses are served in order; closeAfter: false keeps the connection for the next request")
    func sequenceAndKeepAlive() async throws {
        let raw = try await RawServer.start(
            responses: [
                Data("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none".utf8),
                Data("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo".utf8),
            ],
            closeAfter: false
        )
        let output = try await Curl.run([raw.url("/a").absoluteString, raw.url("/b").absoluteString, raw.url("/c").absoluteString])
        let connections = raw.connectionCount
        let heads = raw.requestHeads
        try await raw.shutdown()

        #expect(String(decoding: output.stdout, as: UTF8.self) == "onetwotwo")
        #expect(connections == 1)
        #expect(heads.map { $0.split(separator: " ")[1] } == ["/a", "/b", "/c"])
    }

    @Test("a request body announced by Content-Length is skipped, not taken for the next head")
    func skipsRequestBody() async throws {
        let raw = try await RawServer.start(
            response: Data("HTTP/1.1 204 No Content\r\n\r\n".utf8),
            closeAfter: false
        )
        let output = try await Curl.run([
            "--data-binary", "GET /not-a-request HTTP/1.1\r\n\r\n", raw.url("/post").absoluteString,
            "--next", raw.url("/after").absoluteString,
        ])
        let heads = raw.requestHeads
        try await raw.shutdown()

        #expect(output.exitCode == 0)
        #expect(heads.count == 2)
        #expect(heads.last?.hasPrefix("GET /after") == true)
    }
}
