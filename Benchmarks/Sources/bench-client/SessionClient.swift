import BenchmarkSupport
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The calls a benchmark makes on a URLSession-shaped session: Courier's `Session` and FoundationNetworking's
/// `URLSession` both provide them, with the same labels.
protocol URLLoadingSession: Sendable {
    func data(from url: URL) async throws -> (Data, URLResponse)
    func download(from url: URL) async throws -> (URL, URLResponse)
    func upload(for request: URLRequest, from bodyData: Data) async throws -> (Data, URLResponse)
    func finishTasksAndInvalidate()
}

/// A client over a URLSession-shaped session, through its async API: downloads are moved to their destination
/// (a rename when the session stages them in the output folder), uploads are PUTs of the body in memory.
struct SessionClient<Loader: URLLoadingSession>: BenchmarkClient {
    let plan: TransferPlan
    let session: Loader

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
