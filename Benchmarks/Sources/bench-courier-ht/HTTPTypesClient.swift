import BenchClientKit
import Courier
import CourierClientKit
import Foundation
import HTTPTypes

/// Courier's `Session`, configured as in `bench-courier` (`SessionConfiguration.benchmark`), called through `data(for: HTTPRequest)`,
/// `download(for:)` and `upload(for:from:)`.
struct HTTPTypesClient: BenchmarkClient {
    let plan: TransferPlan
    let session: Session

    init(plan: TransferPlan) {
        self.plan = plan
        self.session = Session(configuration: .benchmark(for: plan))
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
