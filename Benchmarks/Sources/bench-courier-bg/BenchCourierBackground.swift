import ArgumentParser
import BenchClientKit

/// Courier's background session for the comparison, spawned by `courier-bench` once per run (download
/// workloads; the harness runs it on W4). It starts a courierd of its own (`$COURIERD`, else beside this
/// executable, else on PATH) with private runtime and state directories, and stops it at the end of the run.
@main
struct BenchCourierBackground: ParsableCommand, ClientMaker {
    static let configuration = CommandConfiguration(
        commandName: "bench-courier-bg",
        abstract: "Runs one download workload through a background session in courierd (spawned by courier-bench).",
        subcommands: [RunCommand<BenchCourierBackground>.self]
    )

    static func makeClient(for plan: TransferPlan) -> any BenchmarkClient {
        BackgroundClient(plan: plan)
    }
}
