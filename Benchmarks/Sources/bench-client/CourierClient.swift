import BenchmarkSupport
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Courier's `Session` through its async API, sized for the workload: as many connections and running transfers
/// as the workload keeps in flight, downloads staged in the output folder so that the final move is a rename.
struct CourierClient: BenchmarkClient {
    let plan: TransferPlan
    let session: Session

    init(plan: TransferPlan) {
        self.plan = plan
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = plan.workload.concurrency
        configuration.maximumConcurrentTransfers = plan.workload.concurrency
        configuration.temporaryDirectory = plan.output
        if let loops = ProcessInfo.processInfo.environment["COURIER_BENCH_LOOPS"].flatMap(Int.init) {
            configuration.engineLoopCount = loops
        }
        session = Session(configuration: configuration)
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
