import ArgumentParser
import BenchmarkSupport
import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Measures what a task costs while it waits for a connection slot: `count` data tasks created and resumed on a
/// session that runs one transfer at a time, against a listener that never accepts, so that all but one stay
/// queued in the engine. Reports the growth of the resident set divided by `count`.
struct Queued: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Memory per task that is resumed but waiting for a connection slot.")

    @Option(help: "Tasks to queue")
    var count = 100_000

    func run() async throws {
        let listener = try StalledListener()
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

    private func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else {
            return 0
        }
        let fields = statm.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// A TCP listener on 127.0.0.1 that never accepts: connections complete in the backlog and never get a response.
final class StalledListener: Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            throw ValidationError("cannot listen on 127.0.0.1: errno \(errno)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}
