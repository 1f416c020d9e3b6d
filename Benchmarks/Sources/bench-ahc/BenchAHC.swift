import ArgumentParser
import BenchClientKit

/// AsyncHTTPClient as a client for the comparison, spawned by `courier-bench` once per run. It links neither
/// Courier nor FoundationNetworking.
@main
struct BenchAHC: ParsableCommand, ClientMaker {
    static let configuration = CommandConfiguration(
        commandName: "bench-ahc",
        abstract: "Runs one benchmark workload with AsyncHTTPClient (spawned by courier-bench).",
        subcommands: [RunCommand<BenchAHC>.self]
    )

    static func makeClient(for plan: TransferPlan) throws -> any BenchmarkClient {
        try AsyncHTTPClientClient(plan: plan)
    }
}
