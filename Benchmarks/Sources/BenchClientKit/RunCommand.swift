public import ArgumentParser

/// A client executable's way of making its client for a run.
public protocol ClientMaker: SendableMetatype {
    static func makeClient(for plan: TransferPlan) throws -> any BenchmarkClient
}

/// The `run` subcommand every client executable has: runs one workload with `Maker`'s client (a synchronous command:
/// ``runBlocking(_:)`` says why).
public struct RunCommand<Maker: ClientMaker>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "run", abstract: "Runs a workload (W1…W5).")
    }

    @OptionGroup var options: RunOptions

    public init() {}

    public func run() throws {
        let options = options
        try runBlocking {
            try await options.execute(with: Maker.makeClient(for:))
        }
    }
}
