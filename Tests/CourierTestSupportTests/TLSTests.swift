import CourierTestSupport
import Foundation
import Testing

@Suite("TLS, ALPN and HTTP/2")
struct TLSTests {
    @Test("HTTPS with --cacert negotiates HTTP/2 and /h2 says so")
    func http2() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let authority = try #require(server.certificateAuthority)
        let transfer = try await Curl.fetch(server.url("/h2"), ["--cacert", authority.pemFile.path])
        let bytes = try await Curl.fetch(server.url("/bytes/100000?seed=6"), ["--cacert", authority.pemFile.path])
        let recorded = server.requests.first
        try await server.shutdown()

        #expect(server.baseURL.absoluteString == "https://127.0.0.1:\(server.port)")
        #expect(transfer.exitCode == 0, "\(transfer.stderr)")
        #expect(transfer.httpVersion == "2")
        #expect(try transfer.json()["httpVersion"] as? String == "2")
        #expect(bytes.body == TestServer.bytes(count: 100_000, seed: 6))
        #expect(recorded?.httpVersion == "2")
    }

    @Test("the CA PEM is a certificate, and the file holds the same bytes")
    func certificateAuthorityFiles() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let authority = try #require(server.certificateAuthority)
        let fileContents = try Data(contentsOf: authority.pemFile)
        try await server.shutdown()

        #expect(String(decoding: authority.pem, as: UTF8.self).hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(fileContents == authority.pem)
        #expect(!FileManager.default.fileExists(atPath: authority.pemFile.path), "shutdown removes the file")
    }

    @Test("the leaf is valid for localhost and ::1 as well as 127.0.0.1")
    func hostNames() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let ca = try #require(server.certificateAuthority).pemFile.path
        let port = server.port
        let localhost = try await Curl.fetch(
            "https://localhost:\(port)/h2",
            ["--cacert", ca, "--resolve", "localhost:\(port):127.0.0.1"]
        )
        let ipv6 = try await Curl.fetch(
            "https://[::1]:\(port)/h2",
            ["--cacert", ca, "--connect-to", "[::1]:\(port):127.0.0.1:\(port)"]
        )
        try await server.shutdown()

        #expect(localhost.exitCode == 0, "\(localhost.stderr)")
        #expect(ipv6.exitCode == 0, "\(ipv6.stderr)")
    }

    @Test("http2: false offers only http/1.1")
    func http1OverTLS() async throws {
        let server = try await TestServer.start(.init(tls: true, http2: false))
        let ca = try #require(server.certificateAuthority).pemFile.path
        let transfer = try await Curl.fetch(server.url("/h2"), ["--cacert", ca, "--http2"])
        try await server.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.httpVersion == "1.1")
        #expect(try transfer.json()["httpVersion"] as? String == "1.1")
    }

    @Test("a client that trusts nothing, or asks for HTTP/1.1, still gets a working server")
    func verificationAndFallback() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let ca = try #require(server.certificateAuthority).pemFile.path
        let untrusting = try await Curl.fetch(server.url("/h2"))
        let http11 = try await Curl.fetch(server.url("/h2"), ["--cacert", ca, "--http1.1"])
        try await server.shutdown()

        #expect(untrusting.exitCode == 60, "the system store does not know the test CA")
        #expect(http11.exitCode == 0)
        #expect(http11.httpVersion == "1.1")
    }

    @Test("untrustedCertificate, wrongHostName and expiredCertificate fail verification (60)")
    func badCertificates() async throws {
        for configuration in [
            TestServer.Configuration(tls: true, untrustedCertificate: true),
            TestServer.Configuration(tls: true, wrongHostName: true),
            TestServer.Configuration(tls: true, expiredCertificate: true),
        ] {
            let server = try await TestServer.start(configuration)
            let ca = try #require(server.certificateAuthority).pemFile.path
            let verified = try await Curl.fetch(server.url("/h2"), ["--cacert", ca])
            let insecure = try await Curl.fetch(server.url("/h2"), ["--insecure"])
            try await server.shutdown()

            #expect(verified.exitCode == 60, "\(configuration): \(verified.stderr)")
            #expect(insecure.exitCode == 0, "the server itself works: \(configuration)")
        }
    }

    @Test("HTTP/2 faults: cut resets the stream, reset aborts the connection, lie is a length mismatch")
    func http2Faults() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let ca = try #require(server.certificateAuthority).pemFile.path
        let cut = try await Curl.fetch(server.url("/bytes/100000?cut=1000"), ["--cacert", ca])
        let reset = try await Curl.fetch(server.url("/bytes/100000?reset=1000"), ["--cacert", ca])
        let lie = try await Curl.fetch(server.url("/bytes/1000?lie=%2B10"), ["--cacert", ca])
        let stall = try await Curl.fetch(server.url("/bytes/10?stall=2000"), ["--cacert", ca], maxTime: 0.5)
        let healthy = try await Curl.fetch(server.url("/bytes/10"), ["--cacert", ca])
        try await server.shutdown()

        #expect(cut.httpVersion == "2")
        #expect(cut.exitCode != 0)
        #expect(cut.body.count <= 1000)
        #expect(reset.exitCode != 0)
        #expect(reset.body.count <= 1000)
        #expect(lie.exitCode != 0)
        #expect(stall.exitCode == 28)
        #expect(healthy.exitCode == 0)
    }

    @Test("HTTP/1.1 over TLS faults: cut gives a partial file (18)")
    func http1TLSCut() async throws {
        let server = try await TestServer.start(.init(tls: true, http2: false))
        let ca = try #require(server.certificateAuthority).pemFile.path
        let cut = try await Curl.fetch(server.url("/bytes/100000?seed=2&cut=1000"), ["--cacert", ca])
        let garbage = try await Curl.fetch(server.url("/garbage"), ["--cacert", ca])
        try await server.shutdown()

        #expect(cut.exitCode == 18, "\(cut.stderr)")
        #expect(cut.body == TestServer.bytes(count: 1000, seed: 2))
        #expect(garbage.exitCode != 0)
    }

    @Test("many requests multiplex over one HTTP/2 connection; uploads work over HTTP/2")
    func multiplexing() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let ca = try #require(server.certificateAuthority).pemFile.path
        let urls = (0..<40).flatMap { ["-o", "/dev/null", server.url("/bytes/1000?seed=\($0)").absoluteString] }
        let output = try await Curl.run(["--cacert", ca, "--parallel", "--parallel-max", "40", "-w", "%{http_version} %{http_code}\n"] + urls)
        let payload = TestServer.bytes(count: 200_000, seed: 3)
        let file = try TemporaryFile(payload)
        defer { file.remove() }
        let upload = try await Curl.fetch(server.url("/upload"), ["--cacert", ca, "--data-binary", "@\(file.url.path)"])
        try await server.shutdown()

        let lines = String(decoding: output.stdout, as: UTF8.self).split(separator: "\n")
        #expect(output.exitCode == 0)
        #expect(lines.count == 40)
        #expect(lines.allSatisfy { $0 == "2 200" })
        #expect(server.connectionCount <= 3, "curl multiplexes; accepted \(server.connectionCount)")
        #expect(try upload.json()["sha256"] as? String == (try Shell.sha256(payload)))
    }
}
