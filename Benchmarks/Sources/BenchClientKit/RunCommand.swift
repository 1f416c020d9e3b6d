public import ArgumentParser

/// A client executable's way of making its client for a run.
public protocol ClientMaker {
    static func makeClient(for plan: TransferPlan) throws -> any BenchmarkClient
}

/// The `run` subcommand every client executable has: runs one workload with `Maker`'s client.
public struct RunCommand<Maker: ClientMaker>: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "run", abstract: "Runs a workload (W1…W5).")
    }

    @OptionGroup var options: RunOptions

    public init() {}

    public func run() async throws {
        try await options.execute(with: Maker.makeClient(for:))
    }
}
