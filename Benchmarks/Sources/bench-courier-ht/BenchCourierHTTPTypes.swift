import ArgumentParser
import BenchClientKit

/// Courier's client through its swift-http-types API (`HTTPRequest` in, `HTTPResponse` out: no `HTTPURLResponse`
/// is built), spawned by `courier-bench` once per run.
@main
struct BenchCourierHTTPTypes: ParsableCommand, ClientMaker {
    static let configuration = CommandConfiguration(
        commandName: "bench-courier-ht",
        abstract: "Runs one benchmark workload with Courier's swift-http-types API (spawned by courier-bench).",
        subcommands: [RunCommand<BenchCourierHTTPTypes>.self]
    )

    static func makeClient(for plan: TransferPlan) -> any BenchmarkClient {
        HTTPTypesClient(plan: plan)
    }
}
