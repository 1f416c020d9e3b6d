import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP/2 as users meet it on a busy HTTPS server: many large bodies to files, in waves, multiplexed on shared
/// connections (docs/engine.md, "Easy handles": the first wave once left every later transfer failing).
@Suite("HTTP/2 workloads", .timeLimit(.minutes(3)))
struct HTTP2WorkloadTests {
    @Test("96 downloads of 1 MiB to files, 32 in flight, in waves over shared HTTP/2 connections")
    func downloadWaves() async throws {
        try await withServer(.init(tls: true)) { server in
            var configuration = testConfiguration()
            configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let length = 1 << 20
            let failures = try await inWaves(total: 96, inFlight: 32) { index in
                let url = server.url("/bytes/\(length)?seed=\(index % 4)")
                let (file, response) = try await session.download(from: url)
                defer { try? FileManager.default.removeItem(at: file) }
                guard (response as? HTTPURLResponse)?.statusCode == 200 else { return "status" }
                return try Data(contentsOf: file) == TestServer.bytes(count: length, seed: index % 4) ? nil : "bytes"
            }
            #expect(failures.isEmpty, "\(failures.count) failed, first: \(failures.first ?? "")")
            #expect(server.requests.allSatisfy { $0.httpVersion == "2" })
            #expect(server.connectionCount <= configuration.engineLoopCount)
        }
    }
}
