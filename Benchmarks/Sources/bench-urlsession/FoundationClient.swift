import BenchClientKit
import Foundation
public import SessionClientKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// FoundationNetworking's async calls take a trailing `delegate:` with a default, which a protocol requirement
// does not match; these pass nil.
extension URLSession: URLLoadingSession {
    func data(from url: URL) async throws -> (Data, URLResponse) {
        try await data(from: url, delegate: nil)
    }

    func download(from url: URL) async throws -> (URL, URLResponse) {
        try await download(from: url, delegate: nil)
    }

    func upload(for request: URLRequest, from bodyData: Data) async throws -> (Data, URLResponse) {
        try await upload(for: request, from: bodyData, delegate: nil)
    }
}

extension SessionClient where Loader == URLSession {
    /// FoundationNetworking's `URLSession`, with as many connections per host as the workload keeps in flight.
    static func foundation(plan: TransferPlan) -> SessionClient {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = plan.workload.concurrency
        configuration.timeoutIntervalForRequest = 120
        return SessionClient(plan: plan, session: URLSession(configuration: configuration))
    }
}
