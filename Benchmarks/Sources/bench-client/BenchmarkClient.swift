import BenchmarkSupport
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One peer's way of running a workload: the idiomatic async API of each client, `concurrency` Swift tasks each
/// running its share of the transfers one after another.
protocol BenchmarkClient: Sendable {
    var plan: TransferPlan { get }

    /// One GET into memory; returns the body length.
    func fetch(_ url: URL) async throws -> Int
    /// One GET whose body ends up in the file `destination`; returns the file's length.
    func download(_ url: URL, to destination: URL) async throws -> Int
    /// One PUT of `body`; returns the bytes sent.
    func upload(_ body: Data, to url: URL) async throws -> Int

    func shutdown() async throws
}

/// What one run moves, resolved from a workload and the harness's folders.
struct TransferPlan: Sendable {
    let workload: Workload
    let baseURL: String
    let fixtures: URL
    let output: URL

    func url(_ index: Int) -> URL {
        URL(string: workload.url(index, baseURL: baseURL))!
    }

    func destination(_ index: Int) -> URL {
        output.appendingPathComponent(workload.outputName(index))
    }
}

/// A transfer finished with an unexpected status or length.
struct TransferFailed: Error, CustomStringConvertible {
    let url: URL
    let reason: String

    var description: String { "\(url): \(reason)" }
}

extension BenchmarkClient {
    func run() async throws -> ClientReport {
        let workload = plan.workload
        let uploadBody: Data? =
            workload.kind == .upload
            ? try Data(contentsOf: plan.fixtures.appendingPathComponent(workload.fixture.fileName)) : nil
        let lanes = workload.concurrency
        return try await withThrowingTaskGroup(of: Int.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var bytes = 0
                    for index in stride(from: lane, to: workload.count, by: lanes) {
                        let url = plan.url(index)
                        let moved =
                            switch workload.kind {
                            case .memory: try await fetch(url)
                            case .disk: try await download(url, to: plan.destination(index))
                            case .upload: try await upload(uploadBody!, to: url)
                            }
                        guard moved == workload.fixture.size else {
                            throw TransferFailed(url: url, reason: "\(moved) bytes, expected \(workload.fixture.size)")
                        }
                        bytes += moved
                    }
                    return bytes
                }
            }
            var total = 0
            for try await bytes in group {
                total += bytes
            }
            return ClientReport(succeeded: workload.count, bytes: total)
        }
    }

    /// Throws unless `response` is an HTTP response with a 2xx status.
    func check(_ response: URLResponse, for url: URL) throws {
        guard let status = (response as? HTTPURLResponse)?.statusCode, (200..<300).contains(status) else {
            throw TransferFailed(url: url, reason: "not a 2xx response: \(response)")
        }
    }

    /// The length of the file at `url`.
    func fileSize(_ url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.size] as? NSNumber)?.intValue ?? -1
    }
}
