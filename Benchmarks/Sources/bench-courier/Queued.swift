import ArgumentParser
import BenchClientKit
import BenchmarkSupport
import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Measures what a task costs while it waits for a connection slot: `count` data tasks created and resumed on a
/// session that runs one transfer at a time, against a listener that never accepts, so that all but one stay
/// queued in the engine. Reports the growth of the resident set divided by `count`.
struct Queued: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Memory per task that is resumed but waiting for a connection slot.")

    @Option(help: "Tasks to queue")
    var count = 100_000

    func run() throws {
        let count = count
        try runBlocking {
            try await Self.measure(count: count)
        }
    }

    static func measure(count: Int) async throws {
        let listener = try LoopbackServer(stalled: true)
        defer { listener.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.maximumConcurrentTransfers = 1
        configuration.httpMaximumConnectionsPerHost = 1
        configuration.engineLoopCount = 1
        let session = Session(configuration: configuration)
        let base = "http://127.0.0.1:\(listener.port)/queued/"

        // The first task takes the only slot and stalls; the engine and its loop thread exist from here on.
        session.dataTask(with: URL(string: base + "first")!).resume()
        try await Task.sleep(for: .milliseconds(300))
        let before = residentBytes()
        for index in 0..<count {
            session.dataTask(with: URL(string: base + String(index))!).resume()
        }
        // Let the loop thread take every submission off its command queue into its priority queue.
        try await Task.sleep(for: .seconds(2))
        let after = residentBytes()
        session.invalidateAndCancel()
        let perTask = Double(after - before) / Double(count)
        print(try ClientReport(succeeded: count, bytes: after - before, bytesPerQueuedTask: perTask).line())
    }

    private static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else {
            return 0
        }
        let fields = statm.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
