import Courier
import CourierTestSupport
import Foundation
import Testing

/// The in-process engine on a network that misbehaves (docs/reliability.md): a ``FaultProxy`` on 127.0.0.1 between
/// the session and the test server delays, throttles, stalls or resets the response. A download ends with the
/// server's bytes, or with the typed error the break calls for within its timeout (never a hang): a stall longer
/// than the request timeout is `timedOut`, a reset `networkConnectionLost`, each with resume data that finishes it.
@Suite("The in-process engine on a network that misbehaves", .blockingWaits, .timeLimit(.minutes(1)))
struct NetworkFaultTests {
    static let count = 1 << 20

    /// Downloads through a proxy with `fault` and a request timeout of 1 s: the bytes or the error, and how long.
    func download(
        through fault: FaultProxy.Fault,
        server: TestServer
    ) async throws -> (Result<Data, CourierError>, TimeInterval, FaultProxy) {
        let proxy = try FaultProxy(upstreamPort: server.port, scheme: server.baseURL.scheme ?? "http", fault: fault)
        var configuration = testConfiguration()
        configuration.timeoutIntervalForRequest = 1
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let started = Date()
        do {
            let (file, _) = try await session.download(from: proxy.url("/bytes/\(Self.count)?seed=9"))
            return (.success(try fileContents(file)), Date().timeIntervalSince(started), proxy)
        } catch let error as CourierError {
            return (.failure(error), Date().timeIntervalSince(started), proxy)
        }
    }

    @Test("latency and throttling: the server's bytes")
    func slowButWhole() async throws {
        try await withServer { server in
            for fault in [FaultProxy.Fault.latency(milliseconds: 5), .throttle(bytesPerSecond: 4 << 20)] {
                let (result, _, proxy) = try await download(through: fault, server: server)
                defer { proxy.stop() }
                #expect((try? result.get()) == TestServer.bytes(count: Self.count, seed: 9), "\(fault): \(result)")
            }
        }
    }

    @Test("a stall longer than the request timeout: timedOut within it, and the resume data finishes the file")
    func stall() async throws {
        try await withServer { server in
            let stall = FaultProxy.Fault.stall(after: 256 << 10, seconds: 5)
            let (result, elapsed, proxy) = try await download(through: stall, server: server)
            defer { proxy.stop() }
            guard case .failure(let error) = result else {
                Issue.record("the stalled download succeeded")
                return
            }
            #expect(error.code == .timedOut, "\(error)")
            // 1 s of silence ends it: well before the stall's 5 s.
            #expect(elapsed < 3.5, "ended after \(elapsed) s")
            try await finish(from: error, server: server)
        }
    }

    @Test("a reset mid-body: networkConnectionLost at once, and the resume data finishes the file")
    func reset() async throws {
        try await withServer { server in
            let (result, elapsed, proxy) = try await download(through: .reset(after: 256 << 10), server: server)
            defer { proxy.stop() }
            guard case .failure(let error) = result else {
                Issue.record("the reset download succeeded")
                return
            }
            #expect(error.code == .networkConnectionLost, "\(error)")
            #expect(elapsed < 3, "ended after \(elapsed) s")
            try await finish(from: error, server: server)
        }
    }

    /// The error's resume data gives the whole file with one ranged request (through the proxy, whose second
    /// connection it leaves alone).
    func finish(from error: CourierError, server: TestServer) async throws {
        let resumeData = try #require(error.resumeData, "no resume data with \(error)")
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        server.removeAllRequests()
        let (file, _) = try await session.download(resumeFrom: resumeData)
        #expect(try fileContents(file) == TestServer.bytes(count: Self.count, seed: 9))
        let range = server.requests.last?.header("Range")
        #expect(range.map { $0 != "bytes=0-" && $0.hasPrefix("bytes=") } == true, "Range: \(String(describing: range))")
    }
}
