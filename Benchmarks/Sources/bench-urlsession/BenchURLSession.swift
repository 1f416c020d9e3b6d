import ArgumentParser
import BenchClientKit
import SessionClientKit

/// FoundationNetworking's `URLSession` as a client for the comparison, spawned by `courier-bench` once per run.
@main
struct BenchURLSession: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-urlsession",
        abstract: "Runs one benchmark workload with FoundationNetworking's URLSession (spawned by courier-bench).",
        subcommands: [Run.self]
    )

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Runs a workload (W1…W5).")

        @OptionGroup var options: RunOptions

        func run() async throws {
            try await options.execute { SessionClient.foundation(plan: $0) }
        }
    }
}
