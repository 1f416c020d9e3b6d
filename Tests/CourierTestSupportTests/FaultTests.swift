import CourierTestSupport
import Foundation
import Testing

@Suite("Wire faults on /bytes")
struct FaultTests {
    @Test("cut=K closes the connection after K body bytes: curl reports a partial file (18)")
    func cut() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/10000?seed=1&cut=100"))
        let chunked = try await Curl.fetch(server.url("/bytes/10000?seed=1&cut=100&chunked=1"))
        try await server.shutdown()

        #expect(transfer.exitCode == 18)
        #expect(transfer.status == 200)
        #expect(transfer.body == TestServer.bytes(count: 100, seed: 1))
        #expect(chunked.exitCode == 18)
        #expect(chunked.body == TestServer.bytes(count: 100, seed: 1))
    }

    @Test("cut=K applies to the bytes of this response, also within a range")
    func cutWithinRange() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(
            server.url("/bytes/10000?seed=1&cut=50"),
            ["-H", "Range: bytes=1000-"]
        )
        try await server.shutdown()

        #expect(transfer.exitCode == 18)
        #expect(transfer.status == 206)
        #expect(transfer.body == TestServer.bytes(count: 10_000, seed: 1).subdata(in: 1000..<1050))
    }

    @Test("reset=K aborts the connection with an RST: curl reports a receive failure (56)")
    func reset() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/100000?reset=1000&trickle=500&interval=20"))
        try await server.shutdown()

        #expect(transfer.exitCode == 56)
        #expect(transfer.stderr.lowercased().contains("reset"))
        #expect(transfer.body.count <= 1000)
    }

    @Test("stall=MS sends the head, then nothing: a client with a shorter timeout gives up (28)")
    func stall() async throws {
        let server = try await TestServer.start()
        let impatient = try await Curl.fetch(server.url("/bytes/100?stall=3000"), maxTime: 1)
        let patient = try await Curl.fetch(server.url("/bytes/100?stall=1000"))
        try await server.shutdown()

        #expect(impatient.exitCode == 28)
        #expect(impatient.status == 200, "the head arrives before the stall")
        #expect(impatient.body.isEmpty)
        #expect(patient.exitCode == 0)
        #expect(patient.body == TestServer.bytes(count: 100))
        #expect(patient.timeTotal >= 0.95)
        #expect(patient.timeStartTransfer < 0.9, "the head is not delayed")
    }

    @Test("trickle=B&interval=MS paces the body")
    func trickle() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/500?seed=4&trickle=100&interval=100"))
        try await server.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.body == TestServer.bytes(count: 500, seed: 4))
        #expect(transfer.timeTotal >= 0.38, "5 pieces, 4 intervals of 100 ms")
    }

    @Test("delay=MS holds back the head")
    func delay() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/10?delay=300"))
        try await server.shutdown()

        #expect(transfer.exitCode == 0)
        #expect(transfer.timeStartTransfer >= 0.28)
        #expect(transfer.body == TestServer.bytes(count: 10))
    }

    @Test("lie=+K announces K bytes too many then closes: partial file (18)")
    func lieLonger() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/1000?lie=%2B10"))
        try await server.shutdown()

        #expect(transfer.header("Content-Length") == "1010")
        #expect(transfer.exitCode == 18)
        #expect(transfer.body == TestServer.bytes(count: 1000))
    }

    @Test("lie=-K announces K bytes too few: the client reads only what was announced")
    func lieShorter() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/bytes/1000?lie=-10"))
        try await server.shutdown()

        #expect(transfer.header("Content-Length") == "990")
        #expect(transfer.body == TestServer.bytes(count: 990))
    }

    @Test("faults leave the server healthy: a later request on a new connection succeeds")
    func serverSurvivesFaults() async throws {
        let server = try await TestServer.start()
        _ = try await Curl.fetch(server.url("/bytes/10000?cut=10"))
        _ = try await Curl.fetch(server.url("/bytes/10000?reset=10"))
        _ = try await Curl.fetch(server.url("/bytes/10000?stall=5000"), maxTime: 0.2)
        let after = try await Curl.fetch(server.url("/bytes/64"))
        try await server.shutdown()

        #expect(after.exitCode == 0)
        #expect(after.body == TestServer.bytes(count: 64))
    }
}
