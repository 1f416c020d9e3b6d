import ArgumentParser
import BenchClientKit

/// AsyncHTTPClient as a client for the comparison, spawned by `courier-bench` once per run. It links neither
/// Courier nor FoundationNetworking.
@main
struct BenchAHC: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-ahc",
        abstract: "Runs one benchmark workload with AsyncHTTPClient (spawned by courier-bench).",
        subcommands: [Run.self]
    )

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Runs a workload (W1…W5).")

        @OptionGroup var options: RunOptions

        func run() async throws {
            try await options.execute { try AsyncHTTPClientClient(plan: $0) }
        }
    }
}
