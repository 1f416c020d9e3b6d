import ArgumentParser
import BenchmarkSupport
import Foundation

/// Runs one workload with one Swift client and prints a ``ClientReport`` line. Spawned by `courier-bench`, once per
/// run, so that the harness reads this process's own CPU time and peak RSS from `wait4`.
@main
struct BenchClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-client",
        abstract: "Runs one benchmark workload with one Swift HTTP client (spawned by courier-bench).",
        subcommands: [Run.self, Queued.self]
    )
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Runs a workload (W1…W5) with a client.")

    @Argument(help: "courier, urlsession or ahc")
    var peer: String

    @Argument(help: "W1 … W5")
    var workload: String

    @Option(help: "The server, as http://127.0.0.1:PORT")
    var baseURL: String

    @Option(help: "The folder holding the fixture files (uploads read theirs from here)")
    var fixtures: String

    @Option(help: "The folder downloads are written to")
    var output: String

    @Option(help: "Transfers in this run (default: the workload's)")
    var count: Int?

    func run() async throws {
        guard let peer = Peer(rawValue: peer), peer.isSwiftClient else {
            throw ValidationError("unknown Swift client '\(self.peer)'")
        }
        guard var workload = Workload.named(workload) else {
            throw ValidationError("unknown workload '\(self.workload)'")
        }
        if let count {
            workload = workload.scaled(by: Double(count) / Double(workload.count))
        }
        let plan = TransferPlan(
            workload: workload,
            baseURL: baseURL,
            fixtures: URL(fileURLWithPath: fixtures),
            output: URL(fileURLWithPath: output)
        )
        let client: any BenchmarkClient =
            switch peer {
            case .courier: SessionClient.courier(plan: plan)
            case .urlsession: SessionClient.foundation(plan: plan)
            case .ahc: try AsyncHTTPClientClient(plan: plan)
            case .curl: fatalError("curl is run by the harness itself")
            }
        let report = try await client.run()
        try await client.shutdown()
        guard report.succeeded == workload.count else {
            throw ValidationError("\(report.succeeded) of \(workload.count) transfers succeeded")
        }
        print(try report.line())
    }
}
