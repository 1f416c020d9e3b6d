import CSupport
import CourierTestSupport
import Foundation
import Testing

/// CR_FLAG_DECODE: the codings libcurl decodes, the counters it reports, and a corrupt body.
@Suite("C engine: content decoding", .blockingWaits)
struct ContentDecodingEngineTests {
    static let codings = ["gzip", "deflate", "br", "zstd"]

    @Test("every coding is offered and decoded; received counts decoded bytes, the wire length is in the metrics")
    func decodes() async throws {
        try await withEngine { engine, server in
            let text = TestServer.text(count: 50_000)
            for coding in Self.codings {
                let (id, _) = engine.submit(
                    server.url("/encoded/\(coding)/50000").absoluteString,
                    flags: UInt32(CR_FLAG_DECODE)
                )
                try await engine.waitForCompletion([id], timeout: .seconds(10))
                let record = engine.record(id)
                let wire = try #require(TestServer.encode(text, coding: coding))
                #expect(record.error == CR_OK, "\(coding): \(record.message ?? "")")
                #expect(record.body == text, "\(coding)")
                #expect(record.lastReceived == Int64(text.count), "\(coding)")
                #expect(record.expectedToReceive == -1, "\(coding)")
                #expect(record.bodyBytesOnWire == Int64(wire.count), "\(coding)")
                #expect(wire.count < text.count / 4, "\(coding)")
            }
            let offered = server.requests.compactMap { $0.header("Accept-Encoding") }
            #expect(offered.count == Self.codings.count)
            for coding in Self.codings {
                #expect(offered.allSatisfy { $0.contains(coding) }, "Accept-Encoding \(offered.first ?? "none")")
            }
        }
    }

    @Test("without the flag nothing is offered and the encoded bytes arrive as they are")
    func raw() async throws {
        try await withEngine { engine, server in
            let (id, _) = engine.submit(server.url("/encoded/gzip/20000").absoluteString)
            try await engine.waitForCompletion([id], timeout: .seconds(10))
            let wire = try #require(TestServer.encode(TestServer.text(count: 20_000), coding: "gzip"))
            #expect(engine.record(id).error == CR_OK)
            #expect(engine.record(id).body == wire)
            #expect(engine.record(id).expectedToReceive == Int64(wire.count))
            #expect(server.requests.last?.header("Accept-Encoding") == nil)
        }
    }

    @Test("a decoded body to a file, chunked and over TLS with HTTP/2")
    func decodesToFileOverH2() async throws {
        try await withEngine(server: .init(tls: true), trustingServer: true) { engine, server in
            let text = TestServer.text(count: 3_000_000)
            for coding in Self.codings {
                let file = TemporaryFile()
                defer { file.remove() }
                let (id, _) = engine.submit(
                    server.url("/encoded/\(coding)/3000000?chunked=1").absoluteString,
                    sink: CR_SINK_FILE,
                    sinkFD: file.openForWriting(),
                    flags: UInt32(CR_FLAG_DECODE | CR_FLAG_HTTP2)
                )
                try await engine.waitForCompletion([id], timeout: .seconds(20))
                let record = engine.record(id)
                #expect(record.error == CR_OK, "\(coding): \(record.message ?? "")")
                #expect(record.httpVersion == 20)
                #expect(record.bytesOnDisk == Int64(text.count), "\(coding)")
                #expect(file.contents() == text, "\(coding)")
            }
        }
    }

    /// The codings whose format carries a checksum of the content (gzip's CRC-32, zlib's Adler-32, zstd's XXH64 when
    /// the encoder writes it). A brotli stream has none: bytes flipped in its middle may still decode, to garbage,
    /// and no client can tell.
    static let checkedCodings = ["gzip", "deflate", "zstd"]

    @Test("a corrupt body, or an unknown coding, fails with CR_ERR_DECODING")
    func corrupt() async throws {
        try await withEngine { engine, server in
            let paths = Self.checkedCodings.map { "/encoded/\($0)/50000?corrupt=1" } + [
                "/encoded/identity/50000?label=x-unknown", "/encoded/gzip/50000?label=br",
            ]
            for coding in paths {
                let (id, _) = engine.submit(
                    server.url(coding).absoluteString,
                    flags: UInt32(CR_FLAG_DECODE)
                )
                try await engine.waitForCompletion([id], timeout: .seconds(10))
                let record = engine.record(id)
                #expect(record.error == CR_ERR_DECODING, "\(coding): \(record.error) \(record.message ?? "")")
            }
        }
    }

    @Test("a short encoded body is a short-body error, judged by its wire length")
    func shortEncoded() async throws {
        try await withEngine { engine, server in
            let wire = try #require(TestServer.encode(TestServer.text(count: 200_000), coding: "gzip"))
            let (id, _) = engine.submit(
                server.url("/encoded/gzip/200000?cut=\(wire.count / 2)").absoluteString,
                flags: UInt32(CR_FLAG_DECODE)
            )
            try await engine.waitForCompletion([id], timeout: .seconds(10))
            let error = engine.record(id).error
            #expect(error == CR_ERR_SHORT_BODY || error == CR_ERR_CONNECTION_LOST)
        }
    }
}
