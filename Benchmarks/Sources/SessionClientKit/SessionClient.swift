public import BenchClientKit
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The calls a benchmark makes on a URLSession-shaped session: Courier's `Session` and FoundationNetworking's
/// `URLSession` both provide them, with the same labels.
public protocol URLLoadingSession: Sendable {
    func data(from url: URL) async throws -> (Data, URLResponse)
    func download(from url: URL) async throws -> (URL, URLResponse)
    func upload(for request: URLRequest, from bodyData: Data) async throws -> (Data, URLResponse)
    func finishTasksAndInvalidate()
}

/// A client over a URLSession-shaped session, through its async API: downloads are moved to their destination
/// (a rename when the session stages them in the output folder), uploads are PUTs of the body in memory.
public struct SessionClient<Loader: URLLoadingSession>: BenchmarkClient {
    public let plan: TransferPlan
    public let session: Loader

    public init(plan: TransferPlan, session: Loader) {
        self.plan = plan
        self.session = session
    }

    public func fetch(_ url: URL) async throws -> Int {
        let (body, response) = try await session.data(from: url)
        try check(response, for: url)
        return body.count
    }

    public func download(_ url: URL, to destination: URL) async throws -> Int {
        let (file, response) = try await session.download(from: url)
        try check(response, for: url)
        try FileManager.default.moveItem(at: file, to: destination)
        return try fileSize(destination)
    }

    public func upload(_ body: Data, to url: URL) async throws -> Int {
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        let (_, response) = try await session.upload(for: request, from: body)
        try check(response, for: url)
        return body.count
    }

    public func shutdown() async throws {
        session.finishTasksAndInvalidate()
    }

    /// Throws unless `response` is an HTTP response with a 2xx status.
    private func check(_ response: URLResponse, for url: URL) throws {
        guard let response = response as? HTTPURLResponse else {
            throw TransferFailed(url: url, reason: "not an HTTP response: \(response)")
        }
        try checkStatus(response.statusCode, for: url)
    }
}
