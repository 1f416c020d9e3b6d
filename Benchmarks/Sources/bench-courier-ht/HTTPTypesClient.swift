import BenchClientKit
import Courier
import Foundation
import HTTPTypes

/// Courier's `Session`, configured as in `bench-courier`, called through `data(for: HTTPRequest)`,
/// `download(for:)` and `upload(for:from:)`.
struct HTTPTypesClient: BenchmarkClient {
    let plan: TransferPlan
    let session: Session

    init(plan: TransferPlan) {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = plan.workload.concurrency
        configuration.maximumConcurrentTransfers = plan.workload.concurrency
        configuration.temporaryDirectory = plan.output
        if let loops = ProcessInfo.processInfo.environment["COURIER_BENCH_LOOPS"].flatMap(Int.init) {
            configuration.engineLoopCount = loops
        }
        self.plan = plan
        self.session = Session(configuration: configuration)
    }

    func fetch(_ url: URL) async throws -> Int {
        let (body, response) = try await session.data(for: HTTPRequest(url: url))
        try checkStatus(response.status.code, for: url)
        return body.count
    }

    func download(_ url: URL, to destination: URL) async throws -> Int {
        let (file, response) = try await session.download(for: HTTPRequest(url: url))
        try checkStatus(response.status.code, for: url)
        try FileManager.default.moveItem(at: file, to: destination)
        return try fileSize(destination)
    }

    func upload(_ body: Data, to url: URL) async throws -> Int {
        let (_, response) = try await session.upload(for: HTTPRequest(method: .put, url: url), from: body)
        try checkStatus(response.status.code, for: url)
        return body.count
    }

    func shutdown() async throws {
        session.finishTasksAndInvalidate()
    }
}
