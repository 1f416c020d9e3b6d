import CourierTestSupport
import Foundation
import Testing

@Suite("GET /bytes: bodies, validators and ranges")
struct BytesRouteTests {
    @Test("the body is TestServer.bytes(count:seed:) with validators and Accept-Ranges")
    func fullBody() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/1024?seed=3"))
        try await server.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.status == 200)
        #expect(transfer.body == TestServer.bytes(count: 1024, seed: 3))
        #expect(transfer.header("ETag") == "\"1024-3\"")
        #expect(transfer.header("Last-Modified") == "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(transfer.header("Accept-Ranges") == "bytes")
        #expect(transfer.header("Content-Length") == "1024")
    }

    @Test("bytes are deterministic, seed-dependent, and prefixes of longer bodies")
    func determinism() {
        let long = TestServer.bytes(count: 10_000, seed: 7)
        #expect(long == TestServer.bytes(count: 10_000, seed: 7))
        #expect(long.prefix(1234) == TestServer.bytes(count: 1234, seed: 7))
        #expect(long != TestServer.bytes(count: 10_000, seed: 8))
        #expect(TestServer.bytes(count: 0, seed: 1).isEmpty)
        // Not a constant or trivially repeating pattern.
        #expect(Set(long).count > 200)
        #expect(TestServer.bytes(count: 16) == TestServer.bytes(count: 16, seed: 0))
    }

    @Test("no seed means seed 0; large bodies stream intact")
    func defaultSeedAndLargeBody() async throws {
        let server = try await TestServer.start()
        let small = try await Curl.fetch(server.url("/bytes/100"))
        let large = try await Curl.fetch(server.url("/bytes/5000000?seed=11"))
        try await server.shutdown()

        #expect(small.body == TestServer.bytes(count: 100, seed: 0))
        #expect(small.header("ETag") == "\"100-0\"")
        #expect(large.exitCode == 0)
        #expect(large.body.count == 5_000_000)
        #expect(large.body == TestServer.bytes(count: 5_000_000, seed: 11))
    }

    @Test("HEAD sends the headers of GET and no body")
    func head() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/2048?seed=1"), ["--head"])
        try await server.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.status == 200)
        #expect(transfer.header("Content-Length") == "2048")
        #expect(transfer.header("ETag") == "\"2048-1\"")
        #expect(transfer.info["size_download"] as? Int == 0)
    }

    @Test("Range: bytes=A-B answers 206 with Content-Range and the slice")
    func closedRange() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/1024?seed=3"), ["-H", "Range: bytes=100-199"])
        try await server.shutdown()

        let full = TestServer.bytes(count: 1024, seed: 3)
        #expect(transfer.status == 206)
        #expect(transfer.header("Content-Range") == "bytes 100-199/1024")
        #expect(transfer.header("Content-Length") == "100")
        #expect(transfer.body == full.subdata(in: 100..<200))
    }

    @Test("Range: bytes=A- and bytes=-S, and an end past the length is clamped")
    func openAndSuffixRanges() async throws {
        let server = try await TestServer.start()
        let open = try await Curl.fetch(server.url("/bytes/1024?seed=3"), ["-H", "Range: bytes=1000-"])
        let suffix = try await Curl.fetch(server.url("/bytes/1024?seed=3"), ["-H", "Range: bytes=-24"])
        let clamped = try await Curl.fetch(server.url("/bytes/1024?seed=3"), ["-H", "Range: bytes=1020-5000"])
        try await server.shutdown()

        let full = TestServer.bytes(count: 1024, seed: 3)
        #expect(open.status == 206)
        #expect(open.header("Content-Range") == "bytes 1000-1023/1024")
        #expect(open.body == full.subdata(in: 1000..<1024))
        #expect(suffix.status == 206)
        #expect(suffix.header("Content-Range") == "bytes 1000-1023/1024")
        #expect(suffix.body == full.subdata(in: 1000..<1024))
        #expect(clamped.status == 206)
        #expect(clamped.header("Content-Range") == "bytes 1020-1023/1024")
        #expect(clamped.body == full.subdata(in: 1020..<1024))
    }

    @Test("a range starting past the end answers 416 with bytes */N")
    func unsatisfiable() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/1024"), ["-H", "Range: bytes=2000-"])
        let exactEnd = try await Curl.fetch(server.url("/bytes/1024"), ["-H", "Range: bytes=1024-1030"])
        try await server.shutdown()

        #expect(transfer.status == 416)
        #expect(transfer.header("Content-Range") == "bytes */1024")
        #expect(transfer.body.isEmpty)
        #expect(exactEnd.status == 416)
    }

    @Test("If-Range: a matching ETag or date honours the range, another ETag gets the full body")
    func ifRange() async throws {
        let server = try await TestServer.start()
        let url = server.url("/bytes/1024?seed=3")
        let matching = try await Curl.fetch(url, ["-H", "Range: bytes=10-19", "-H", "If-Range: \"1024-3\""])
        let stale = try await Curl.fetch(url, ["-H", "Range: bytes=10-19", "-H", "If-Range: \"1024-4\""])
        let date = try await Curl.fetch(
            url,
            ["-H", "Range: bytes=10-19", "-H", "If-Range: Wed, 21 Oct 2015 07:28:00 GMT"]
        )
        let weak = try await Curl.fetch(
            server.url("/bytes/1024?seed=3&weak=1"),
            ["-H", "Range: bytes=10-19", "-H", "If-Range: W/\"1024-3\""]
        )
        try await server.shutdown()

        let full = TestServer.bytes(count: 1024, seed: 3)
        #expect(matching.status == 206)
        #expect(matching.body == full.subdata(in: 10..<20))
        #expect(stale.status == 200)
        #expect(stale.body == full)
        #expect(date.status == 206)
        #expect(weak.status == 200, "If-Range needs a strong validator")
    }

    @Test("ignoreRange=1 always answers 200 with the full body")
    func ignoreRange() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/512?seed=2&ignoreRange=1"), ["-H", "Range: bytes=0-9"])
        try await server.shutdown()

        #expect(transfer.status == 200)
        #expect(transfer.body == TestServer.bytes(count: 512, seed: 2))
        #expect(transfer.header("Content-Range") == nil)
    }

    @Test("etag=, weak=1 and noValidator=1 shape the validators; If-None-Match gives 304")
    func validators() async throws {
        let server = try await TestServer.start()
        let custom = try await Curl.fetch(server.url("/bytes/8?etag=abc"))
        let weak = try await Curl.fetch(server.url("/bytes/8?weak=1"))
        let none = try await Curl.fetch(server.url("/bytes/8?noValidator=1"))
        let notModified = try await Curl.fetch(server.url("/bytes/8"), ["-H", "If-None-Match: \"8-0\""])
        try await server.shutdown()

        #expect(custom.header("ETag") == "\"abc\"")
        #expect(weak.header("ETag") == "W/\"8-0\"")
        #expect(none.header("ETag") == nil)
        #expect(none.header("Last-Modified") == nil)
        #expect(none.body == TestServer.bytes(count: 8))
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
    }

    @Test("chunked=1 sends no Content-Length and a chunked body")
    func chunked() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/200000?seed=5&chunked=1"))
        try await server.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.header("Content-Length") == nil)
        #expect(transfer.header("Transfer-Encoding")?.lowercased() == "chunked")
        #expect(transfer.body == TestServer.bytes(count: 200_000, seed: 5))
    }

    @Test("a bad N is a 400, an unknown path a 404, POST on /bytes a 405")
    func errors() async throws {
        let server = try await TestServer.start()
        let bad = try await Curl.fetch(server.url("/bytes/abc"))
        let missing = try await Curl.fetch(server.url("/nothing-here"))
        let post = try await Curl.fetch(server.url("/bytes/10"), ["-X", "POST"])
        try await server.shutdown()

        #expect(bad.status == 400)
        #expect(missing.status == 404)
        #expect(post.status == 405)
    }
}
