import ArgumentParser
import BenchClientKit
import SessionClientKit

/// Courier's client for the comparison, spawned by `courier-bench` once per run. It links only Courier (and
/// Foundation), as an application using Courier would. `queued` measures what a waiting task costs.
@main
struct BenchCourier: ParsableCommand, ClientMaker {
    static let configuration = CommandConfiguration(
        commandName: "bench-courier",
        abstract: "Runs one benchmark workload with Courier's Session (spawned by courier-bench).",
        subcommands: [RunCommand<BenchCourier>.self, Queued.self]
    )

    static func makeClient(for plan: TransferPlan) -> any BenchmarkClient {
        SessionClient.courier(plan: plan)
    }
}
