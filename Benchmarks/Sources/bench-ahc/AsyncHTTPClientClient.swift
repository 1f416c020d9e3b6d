import AsyncHTTPClient
import BenchClientKit
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL

/// AsyncHTTPClient on NIO's singleton event loop group (one loop per core), with as many HTTP/1.1 connections per
/// host as the workload keeps in flight. Downloads go through its `FileDownloadDelegate`, which writes to the
/// destination through NIO's thread pool.
struct AsyncHTTPClientClient: BenchmarkClient {
    let plan: TransferPlan
    let client: HTTPClient
    /// The upload fixture, made a `ByteBuffer` once so that each PUT sends it without a copy.
    let uploadBody: ByteBuffer?

    init(plan: TransferPlan) throws {
        self.plan = plan
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: plan.workload.concurrency
        )
        // A request waits for its pool connection up to the connect timeout: W7's 10,000 at once took AsyncHTTPClient
        // more than 10 s to open here (getConnectionFromPoolTimeout), where Courier's requests wait up to their 60 s.
        configuration.timeout = .init(connect: .seconds(60), read: .seconds(120))
        if let authority = plan.certificateAuthority {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(authority.path)
            configuration.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        if plan.workload.kind == .upload {
            let file = plan.fixtures.appendingPathComponent(plan.workload.fixture.fileName)
            uploadBody = ByteBuffer(data: try Data(contentsOf: file))
        } else {
            uploadBody = nil
        }
    }

    func fetch(_ url: URL) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(120))
        try checkStatus(Int(response.status.code), for: url)
        return try await response.body.collect(upTo: 64 << 20).readableBytes
    }

    func download(_ url: URL, to destination: URL) async throws -> Int {
        let delegate = try FileDownloadDelegate(path: destination.path)
        let request = try HTTPClient.Request(url: url.absoluteString)
        let progress = try await client.execute(request: request, delegate: delegate).get()
        try checkStatus(Int(progress.head.status.code), for: url)
        return try fileSize(destination)
    }

    func upload(_ body: Data, to url: URL) async throws -> Int {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .PUT
        request.body = .bytes(uploadBody!)
        let response = try await client.execute(request, timeout: .seconds(120))
        try checkStatus(Int(response.status.code), for: url)
        _ = try await response.body.collect(upTo: 1 << 20)
        return uploadBody!.readableBytes
    }

    func shutdown() async throws {
        try await client.shutdown()
    }
}
