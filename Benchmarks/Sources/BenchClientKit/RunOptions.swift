import ArgumentParser
import BenchmarkSupport
import Foundation

/// What ``RunCommand`` takes: one workload, the server, the folders. `execute` runs the workload with the client it
/// is given and prints a ``ClientReport`` line for the harness.
struct RunOptions: ParsableArguments {
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

    @Option(help: "Over https: the PEM certificate to trust (nginx's own)")
    var caFile: String?

    /// Builds the client for this run's plan, runs it, and prints the report; throws unless every transfer
    /// succeeded.
    func execute(with makeClient: (TransferPlan) throws -> any BenchmarkClient) async throws {
        guard var workload = Workload.named(workload) else {
            throw ValidationError("unknown workload '\(self.workload)'")
        }
        if let count {
            workload = workload.scaled(by: Double(count) / Double(workload.count))
        }
        let client = try makeClient(
            TransferPlan(
                workload: workload,
                baseURL: baseURL,
                fixtures: URL(fileURLWithPath: fixtures),
                output: URL(fileURLWithPath: output),
                certificateAuthority: caFile.map { URL(fileURLWithPath: $0) }
            ))
        let report = try await client.run()
        try await client.shutdown()
        guard report.succeeded == workload.count else {
            throw ValidationError("\(report.succeeded) of \(workload.count) transfers succeeded")
        }
        print(try report.line())
    }
}
