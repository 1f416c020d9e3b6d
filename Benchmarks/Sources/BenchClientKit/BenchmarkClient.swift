public import BenchmarkSupport
public import Foundation

/// One peer's way of running a workload: the idiomatic async API of each client, `concurrency` Swift tasks each
/// running its share of the transfers one after another.
public protocol BenchmarkClient: Sendable {
    var plan: TransferPlan { get }

    /// Runs the plan's workload. The default (below) runs `concurrency` lanes of ``fetch(_:)``,
    /// ``download(_:to:)`` or ``upload(_:to:)``; a client whose API is not one call per transfer (a background
    /// session: create every task, resume them, wait for the delegate) provides its own.
    func run() async throws -> ClientReport

    /// One GET into memory; returns the body length.
    func fetch(_ url: URL) async throws -> Int
    /// One GET whose body ends up in the file `destination`; returns the file's length.
    func download(_ url: URL, to destination: URL) async throws -> Int
    /// One PUT of `body`; returns the bytes sent.
    func upload(_ body: Data, to url: URL) async throws -> Int

    func shutdown() async throws
}

/// What one run moves, resolved from a workload and the harness's folders.
public struct TransferPlan: Sendable {
    public let workload: Workload
    public let baseURL: String
    public let fixtures: URL
    public let output: URL
    /// Over https: the PEM file of the CA (nginx's self-signed certificate) the client trusts.
    public let certificateAuthority: URL?

    public init(workload: Workload, baseURL: String, fixtures: URL, output: URL, certificateAuthority: URL? = nil) {
        self.workload = workload
        self.baseURL = baseURL
        self.fixtures = fixtures
        self.output = output
        self.certificateAuthority = certificateAuthority
    }

    public func url(_ index: Int) -> URL {
        URL(string: workload.url(index, baseURL: baseURL))!
    }

    public func destination(_ index: Int) -> URL {
        output.appendingPathComponent(workload.outputName(index))
    }
}

/// A transfer finished with an unexpected status or length.
public struct TransferFailed: Error, CustomStringConvertible {
    public let url: URL
    public let reason: String

    public init(url: URL, reason: String) {
        self.url = url
        self.reason = reason
    }

    public var description: String { "\(url): \(reason)" }
}

extension BenchmarkClient {
    /// Runs the plan's workload: `concurrency` Swift tasks, each running its share of the transfers in turn.
    public func run() async throws -> ClientReport {
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

    /// Throws unless `status` is a 2xx HTTP status: every client's check of every transfer.
    public func checkStatus(_ status: Int, for url: URL) throws {
        guard (200..<300).contains(status) else {
            throw TransferFailed(url: url, reason: "status \(status)")
        }
    }

    /// The length of the file at `url`.
    public func fileSize(_ url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.size] as? NSNumber)?.intValue ?? -1
    }
}
