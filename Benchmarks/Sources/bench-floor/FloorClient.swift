import BenchClientKit
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The workloads on ``FloorEngine``: a GET into memory, a GET straight into the destination file, a PUT read
/// from memory. Each checks the status as the other clients do; nothing else (no task object, no delegate, no
/// redirects, cookies, metrics or staging file).
struct FloorClient: BenchmarkClient {
    let plan: TransferPlan
    private let engine: FloorEngine

    init(plan: TransferPlan) throws {
        self.plan = plan
        engine = try FloorEngine(maximumConnections: plan.workload.concurrency)
    }

    func fetch(_ url: URL) async throws -> Int {
        let (body, response) = try await engine.exchange(url)
        try checkStatus(response.statusCode, for: url)
        return body.count
    }

    func download(_ url: URL, to destination: URL) async throws -> Int {
        let descriptor = open(destination.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw TransferFailed(url: url, reason: "cannot create \(destination.path) (errno \(errno))")
        }
        let (_, response) = try await engine.exchange(url, sinkDescriptor: descriptor)
        try checkStatus(response.statusCode, for: url)
        return try fileSize(destination)
    }

    func upload(_ body: Data, to url: URL) async throws -> Int {
        let (_, response) = try await engine.exchange(url, method: "PUT", body: body)
        try checkStatus(response.statusCode, for: url)
        return body.count
    }

    func shutdown() async throws {}
}
