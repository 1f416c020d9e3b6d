import ArgumentParser
import BenchClientKit
import SessionClientKit

/// Courier's client for the comparison, spawned by `courier-bench` once per run so that the run's CPU time and
/// peak RSS are this process's own. It links only Courier (and Foundation), as an application using Courier would.
@main
struct BenchCourier: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-courier",
        abstract: "Runs one benchmark workload with Courier's Session (spawned by courier-bench).",
        subcommands: [Run.self, Queued.self]
    )

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Runs a workload (W1…W5).")

        @OptionGroup var options: RunOptions

        func run() async throws {
            try await options.execute { SessionClient.courier(plan: $0) }
        }
    }
}
