import BenchmarkSupport
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// FoundationNetworking's `URLSession` through its async API, with as many connections per host as the workload
/// keeps in flight.
struct FoundationClient: BenchmarkClient {
    let plan: TransferPlan
    let session: URLSession

    init(plan: TransferPlan) {
        self.plan = plan
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = plan.workload.concurrency
        configuration.timeoutIntervalForRequest = 120
        session = URLSession(configuration: configuration)
    }

    func fetch(_ url: URL) async throws -> Int {
        let (body, response) = try await session.data(from: url)
        try check(response, for: url)
        return body.count
    }

    func download(_ url: URL, to destination: URL) async throws -> Int {
        let (file, response) = try await session.download(from: url)
        try check(response, for: url)
        try FileManager.default.moveItem(at: file, to: destination)
        return try fileSize(destination)
    }

    func upload(_ body: Data, to url: URL) async throws -> Int {
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        let (_, response) = try await session.upload(for: request, from: body)
        try check(response, for: url)
        return body.count
    }

    func shutdown() async throws {
        session.finishTasksAndInvalidate()
    }
}
