import Courier
import CourierConcurrency
import CourierIPC
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `waitsForConnectivity` against a network the test makes itself: a network namespace joined to this one by a veth
/// pair (iproute2), the test server on the host's end, a client (Tests/Fixtures/ConnectivityProbe) inside the
/// namespace. The namespace's link goes down (no route to the server) and comes back. Needs root and `ip`.
@Suite("connectivity", .blockingWaits, .serialized)
struct ConnectivityTests {
    static var canMakeNetworks: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")
    }

    /// A namespace with one veth link to this one: 10.231.N.1 here, 10.231.N.2 there; removed by `remove()`.
    struct Network {
        let name: String
        let hostSide: String
        let inside: String
        let hostAddress: String

        init() throws {
            let tag = String(UInt32.random(in: 0..<0xFFFF_FFFF), radix: 36)
            name = "courier-net-\(tag)"
            hostSide = "cvh\(tag)".prefix(15).description
            inside = "cvn\(tag)".prefix(15).description
            let subnet = Int.random(in: 1..<250)
            hostAddress = "10.231.\(subnet).1"
            try Self.ip(["netns", "add", name])
            try Self.ip(["link", "add", hostSide, "type", "veth", "peer", "name", inside])
            try Self.ip(["link", "set", inside, "netns", name])
            try Self.ip(["addr", "add", "\(hostAddress)/24", "dev", hostSide])
            try Self.ip(["link", "set", hostSide, "up"])
            try Self.ip(["netns", "exec", name, "ip", "addr", "add", "10.231.\(subnet).2/24", "dev", inside])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", "lo", "up"])
        }

        /// The namespace's link up (a route to the server) or down (none).
        func link(up: Bool) throws {
            try Self.ip(["netns", "exec", name, "ip", "link", "set", inside, up ? "up" : "down"])
        }

        /// `command` run inside the namespace.
        func command(_ command: [String]) -> [String] {
            ["netns", "exec", name] + command
        }

        func remove() {
            _ = try? Self.ip(["link", "delete", hostSide])
            _ = try? Self.ip(["netns", "delete", name])
        }

        @discardableResult
        static func ip(_ arguments: [String]) throws -> String {
            let result = try ChildProcess.run(
                "/usr/sbin/ip",
                arguments: arguments,
                environment: ProcessInfo.processInfo.environment,
                timeout: .seconds(20)
            )
            guard result.termination == .exited(0) else {
                throw POSIXError(.EIO)
            }
            return String(decoding: result.standardOutput, as: UTF8.self)
        }
    }

    static func probe() throws -> String {
        let candidate = ThisExecutable.url.deletingLastPathComponent().appendingPathComponent("ConnectivityProbe").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw POSIXError(.ENOENT)
        }
        return candidate
    }

    /// The probe's lines so far.
    final class Lines: Sendable {
        let text = LockedValue("")
        func waitFor(_ prefix: String, timeout: TimeInterval) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let line = text.withLock({ $0 }).split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                    return String(line)
                }
                usleep(50_000)
            }
            return nil
        }
    }

    @Test(
        """
        no route to the server: the task waits, says so once, and completes when the link comes back; without \
        waiting it fails at once
        """,
        .enabled(if: canMakeNetworks, "needs root and iproute2 (a network namespace and a veth pair)")
    )
    func waitsForTheLink() async throws {
        let network = try Network()
        defer { network.remove() }
        var configuration = TestServer.Configuration()
        configuration.host = network.hostAddress
        let server = try await TestServer.start(configuration)
        let url = server.url("/bytes/300000?seed=5").absoluteString
        let expected = TestServer.bytes(count: 300_000, seed: 5)
        let checksum = expected.reduce(UInt64(0)) { ($0 &* 31) &+ UInt64($1) }
        try network.link(up: false)

        // Without waitsForConnectivity: notConnectedToInternet, at once.
        let impatient = try ChildProcess.run(
            "/usr/sbin/ip",
            arguments: network.command([try Self.probe(), url, "--no-wait"]),
            environment: ProcessInfo.processInfo.environment,
            timeout: .seconds(30)
        )
        let impatientOutput = String(decoding: impatient.standardOutput, as: UTF8.self)
        #expect(impatientOutput == "failed notConnectedToInternet\n", "\(impatientOutput)")

        let lines = Lines()
        let patient = try ChildProcess(
            "/usr/sbin/ip",
            arguments: network.command([try Self.probe(), url]),
            environment: ProcessInfo.processInfo.environment,
            standardOutput: .stream { chunk in lines.text.withLock { $0 += String(decoding: chunk, as: UTF8.self) } },
            standardError: .inherit
        )
        defer {
            patient.send(SIGKILL)
            _ = patient.wait(timeout: .seconds(10))
        }
        #expect(lines.waitFor("waiting", timeout: 20) != nil, "\(lines.text.withLock { $0 })")
        usleep(1_000_000)
        #expect(!server.requests.contains { $0.uri.hasPrefix("/bytes/300000") }, "a request got through")
        try network.link(up: true)
        let completed = lines.waitFor("completed", timeout: 20)
        #expect(completed == "completed 300000 \(checksum)", "\(lines.text.withLock { $0 })")
        #expect(patient.wait(timeout: .seconds(10)) == .exited(0))
        #expect(lines.text.withLock { $0 }.components(separatedBy: "waiting").count == 2, "told more than once")
        try await server.shutdown()
    }
}
