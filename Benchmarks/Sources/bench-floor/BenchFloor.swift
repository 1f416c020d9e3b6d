import ArgumentParser
import BenchClientKit

/// The floor for the comparison, spawned by `courier-bench` once per run: Courier's C engine with the least Swift
/// an async, URLSession-shaped API needs above it (see ``FloorEngine``). It links neither Courier nor
/// AsyncHTTPClient.
@main
struct BenchFloor: ParsableCommand, ClientMaker {
    static let configuration = CommandConfiguration(
        commandName: "bench-floor",
        abstract: "Runs one benchmark workload on the engine with a minimal async layer (spawned by courier-bench).",
        subcommands: [RunCommand<BenchFloor>.self]
    )

    static func makeClient(for plan: TransferPlan) throws -> any BenchmarkClient {
        try FloorClient(plan: plan)
    }
}
