import ArgumentParser
import BenchClientKit
import SessionClientKit

/// FoundationNetworking's `URLSession` as a client for the comparison, spawned by `courier-bench` once per run.
@main
struct BenchURLSession: ParsableCommand, ClientMaker {
    static let configuration = CommandConfiguration(
        commandName: "bench-urlsession",
        abstract: "Runs one benchmark workload with FoundationNetworking's URLSession (spawned by courier-bench).",
        subcommands: [RunCommand<BenchURLSession>.self]
    )

    static func makeClient(for plan: TransferPlan) -> any BenchmarkClient {
        SessionClient.foundation(plan: plan)
    }
}
