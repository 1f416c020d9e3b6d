import CourierTestSupport
import Foundation
import Testing

@Suite("POST/PUT /upload, /echo and /headers")
struct UploadEchoHeadersTests {
    @Test("POST /upload answers the body's length and SHA-256 (checked with sha256sum)")
    func postUpload() async throws {
        let payload = TestServer.bytes(count: 300_000, seed: 9)
        let file = try TemporaryFile(payload)
        defer { file.remove() }
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/upload"), ["--data-binary", "@\(file.url.path)"])
        let recorded = server.requests.last
        try await server.shutdown()

        let json = try transfer.json()
        #expect(transfer.status == 200)
        #expect(json["length"] as? Int == 300_000)
        #expect(json["sha256"] as? String == (try Shell.sha256(payload)))
        #expect(json["method"] as? String == "POST")
        #expect(recorded?.bodyLength == 300_000)
        #expect(recorded?.method == "POST")
    }

    @Test("PUT /upload of 2 MB: Expect: 100-continue is answered at once, method is PUT")
    func putUploadWithContinue() async throws {
        let payload = TestServer.bytes(count: 2_000_000, seed: 1)
        let file = try TemporaryFile(payload)
        defer { file.remove() }
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/upload"), ["-T", file.url.path])
        let recorded = server.requests.last
        try await server.shutdown()

        let json = try transfer.json()
        #expect(json["length"] as? Int == 2_000_000)
        #expect(json["sha256"] as? String == (try Shell.sha256(payload)))
        #expect(json["method"] as? String == "PUT")
        #expect(recorded?.header("Expect")?.lowercased() == "100-continue")
        // Without the server's 100 Continue, curl would send the body after its 1 s timeout and
        // there would be no interim head.
        #expect(transfer.headBlocks.first?.first?.1.contains("100 Continue") == true, "a 100 Continue came first")
    }

    @Test("/upload with delay=MS answers late; GET /upload is a 405")
    func uploadDelayAndMethod() async throws {
        let server = try await TestServer.start()
        let delayed = try await Curl.fetch(server.url("/upload?delay=300"), ["--data-binary", "abc"])
        let get = try await Curl.fetch(server.url("/upload"))
        try await server.shutdown()

        #expect(delayed.timeStartTransfer >= 0.28)
        #expect(try delayed.json()["length"] as? Int == 3)
        #expect(get.status == 405)
    }

    @Test("/echo answers the body back with the request's Content-Type")
    func echo() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(
            server.url("/echo"),
            ["-X", "PATCH", "-H", "Content-Type: text/x-courier", "--data-binary", "hello, echo"]
        )
        let empty = try await Curl.fetch(server.url("/echo"))
        try await server.shutdown()

        #expect(transfer.status == 200)
        #expect(transfer.text == "hello, echo")
        #expect(transfer.header("Content-Type") == "text/x-courier")
        #expect(empty.status == 200)
        #expect(empty.body.isEmpty)
    }

    @Test("/headers lists the request headers, names lower-cased, repeats joined with \", \"")
    func headers() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(
            server.url("/headers"),
            ["-H", "X-Courier-Test: one", "-H", "x-courier-test: two", "-A", "courier-tests/1"]
        )
        try await server.shutdown()

        let json = try transfer.json()
        #expect(json["x-courier-test"] as? String == "one, two")
        #expect(json["user-agent"] as? String == "courier-tests/1")
        #expect((json["host"] as? String)?.hasPrefix("127.0.0.1:") == true)
    }
}
