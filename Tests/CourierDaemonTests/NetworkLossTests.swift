import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A network that goes away under courierd (docs/reliability.md): courierd runs inside a network namespace of the
/// test's own (``VethNetwork``), the test server on the host end of the veth pair, and each scenario breaks the path
/// in the middle of a download — the link down, the route gone, or a ``FaultProxy`` that delays, throttles, stalls or
/// resets. Every download must complete with the server's bytes, going on with `Range` after a break.
///
/// The outage lasts `COURIER_NETWORK_OUTAGE` seconds (3 in the test command; `scripts/network-loss.sh` runs 30).
@Suite("courierd on a network that goes away", .blockingWaits, .serialized)
struct NetworkLossTests {
    static let identifier = "com.example.podcasts.network"

    enum Break: CustomStringConvertible {
        case linkDown
        case routeGone
        case proxy(FaultProxy.Fault)

        var description: String {
            switch self {
            case .linkDown: "the link down"
            case .routeGone: "the route gone"
            case .proxy(let fault): "a proxy: \(fault)"
            }
        }
    }

    static var breaks: [Break] {
        [
            .linkDown,
            .routeGone,
            .proxy(.latency(milliseconds: 20)),
            .proxy(.throttle(bytesPerSecond: 1 << 20)),
            .proxy(.stall(after: 1 << 20, seconds: 4)),
            .proxy(.reset(after: 1 << 20)),
        ]
    }

    @Test(
        "link down, route gone, latency, throttling, a stall, a reset: each background download ends byte-identical",
        .enabled(if: VethNetwork.canMake, "needs root and iproute2 (a network namespace and a veth pair)")
    )
    func everyBreak() async throws {
        let outage = Double(ProcessInfo.processInfo.environment["COURIER_NETWORK_OUTAGE"] ?? "") ?? 3
        let network = try VethNetwork()
        defer { network.remove() }
        try network.link(up: true)
        var configuration = TestServer.Configuration()
        configuration.host = network.hostAddress
        let server = try await TestServer.start(configuration)
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        daemon.launchPrefix = ["/usr/sbin/ip"] + network.command([])
        defer { daemon.cleanup() }
        try daemon.start()
        let session = IPCMessage.OpenSession(request: 1, identifier: Self.identifier, requestTimeout: 2)
        var (client, answer) = try Client.opening(session, on: daemon)
        defer { client.close() }
        guard case .reply(let opened)? = answer, case .sessionOpened = opened.result else {
            Issue.record("the session did not open: \(String(describing: answer))")
            return
        }

        var verified = 0
        var refetched: Int64 = 0
        for (index, scenario) in Self.breaks.enumerated() {
            let count = 4 << 20
            let seed = 100 + index
            let path = "/bytes/\(count)?seed=\(seed)&trickle=65536&interval=20"
            var proxy: FaultProxy?
            var url = server.url(path)
            if case .proxy(let fault) = scenario {
                proxy = try FaultProxy(
                    address: network.hostAddress,
                    upstreamAddress: network.hostAddress,
                    upstreamPort: server.port,
                    fault: fault
                )
                url = proxy!.url(path)
            }
            defer { proxy?.stop() }
            server.removeAllRequests()
            let started = Date()
            let task = IPCMessage.BackgroundTask(
                identifier: index + 1,
                kind: .download,
                request: TaskRequest(URLRequest(url: url))
            )
            let created = try client.request { .createTask(.init(request: $0, session: Self.identifier, task: task)) }
            guard case .reply(let reply)? = created, reply.result == .taskCreated else {
                Issue.record("\(scenario): not created: \(String(describing: created))")
                continue
            }
            switch scenario {
            case .linkDown, .routeGone:
                // Part-way through (half a MiB in), the path goes for the outage.
                let moving = try client.tasks(of: Self.identifier, timeout: 10) { tasks in
                    (tasks.first { $0.identifier == index + 1 }?.countOfBytesReceived ?? 0) > 512 << 10
                }
                #expect(
                    (moving.first { $0.identifier == index + 1 }?.countOfBytesReceived ?? 0) > 512 << 10,
                    "\(scenario): the download did not start"
                )
                if case .linkDown = scenario { try network.link(up: false) } else { try network.route(present: false) }
                usleep(UInt32(outage * 1_000_000))
                if case .linkDown = scenario { try network.link(up: true) } else { try network.route(present: true) }
            case .proxy:
                break
            }
            var file: Data?
            var completion: TransferCompletion?
            let deadline = Date().addingTimeInterval(60 + outage)
            while completion == nil, Date() < deadline, let batch = try client.nextBatch() {
                for event in batch.events where event.task == index + 1 {
                    if case .downloaded(let path) = event.event.payload {
                        file = FileManager.default.contents(atPath: path)
                    }
                    if case .complete(let ended) = event.event.payload {
                        completion = ended
                    }
                }
                try client.send(
                    .acknowledge(.init(session: Self.identifier, through: batch.events.last?.sequence ?? 0))
                )
            }
            let ranges = server.requests.filter { $0.path.hasPrefix("/bytes/\(count)") }.compactMap {
                $0.header("Range")
            }
            #expect(completion != nil && completion?.error == nil, "\(scenario): \(String(describing: completion))")
            #expect(file == TestServer.bytes(count: count, seed: seed), "\(scenario): not the server's bytes")
            if file == TestServer.bytes(count: count, seed: seed) {
                verified += 1
            }
            var wire = ""
            if let proxy {
                refetched += max(0, proxy.bytesToClients - Int64(count))
                wire = ", \(proxy.bytesToClients) bytes through the proxy for \(count)"
            }
            switch scenario {
            case .linkDown, .routeGone, .proxy(.stall), .proxy(.reset):
                #expect(ranges.contains { $0 != "bytes=0-" }, "\(scenario): no Range after the break: \(ranges)")
            default:
                break
            }
            let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
            print("network loss: \(scenario): completed in \(seconds) s, ranges \(ranges)\(wire)")
        }
        print(
            "network loss: \(Self.breaks.count) scenarios, \(verified) files verified, outage \(outage) s, "
                + "\(refetched) bytes re-fetched through the proxy (heads included)"
        )
        try await server.shutdown()
    }
}
