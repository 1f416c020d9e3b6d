import CourierTestSupport
import Foundation
import Testing

@Suite("Recording, counting and shutdown")
struct LifecycleTests {
    @Test("requests are recorded with method, uri, headers, body length and version; keep-alive reuses one connection")
    func recording() async throws {
        let server = try await TestServer.start()
        #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
        #expect(server.certificateAuthority == nil)
        let output = try await Curl.run([
            "-H", "X-Trace: 1", server.url("/bytes/1").absoluteString,
            server.url("/status/200").absoluteString,
            "--next", "--data-binary", "12345", server.url("/echo?x=1").absoluteString,
        ])
        let requests = server.requests
        let connections = server.connectionCount
        try await server.shutdown()

        #expect(output.exitCode == 0)
        #expect(connections == 1)
        try #require(requests.count == 3)
        #expect(requests.map(\.method) == ["GET", "GET", "POST"])
        #expect(requests.map(\.uri) == ["/bytes/1", "/status/200", "/echo?x=1"])
        #expect(requests.map(\.bodyLength) == [0, 0, 5])
        #expect(requests.allSatisfy { $0.httpVersion == "1.1" })
        #expect(requests[0].header("x-trace") == "1")
        #expect(requests[2].path == "/echo")
        #expect(requests[0].headers.contains { $0.0 == "Host" && $0.1 == "127.0.0.1:\(server.port)" })
    }

    @Test("separate curl runs open separate connections, and they are counted as closed")
    func connectionCounting() async throws {
        let server = try await TestServer.start()
        for _ in 0..<3 {
            _ = try await Curl.fetch(server.url("/bytes/1"))
        }
        #expect(server.connectionCount == 3)
        var open = server.openConnectionCount
        for _ in 0..<100 where open != 0 {
            try await Task.sleep(for: .milliseconds(20))
            open = server.openConnectionCount
        }
        #expect(open == 0)
        server.removeAllRequests()
        #expect(server.requests.isEmpty)
        try await server.shutdown()
    }

    @Test("after shutdown nothing listens on the port; shutdown twice is fine")
    func shutdown() async throws {
        let server = try await TestServer.start()
        let before = try await Curl.fetch(server.url("/bytes/1"))
        try await server.shutdown()
        try await server.shutdown()
        let after = try await Curl.fetch(server.url("/bytes/1"))

        #expect(before.exitCode == 0)
        #expect(after.exitCode == 7, "connection refused")
    }

    @Test("several servers run at once on different ports")
    func severalServers() async throws {
        let servers = try await [TestServer.start(), TestServer.start(), TestServer.start(.init(tls: true))]
        #expect(Set(servers.map(\.port)).count == 3)
        for server in servers {
            try await server.shutdown()
        }
    }

    /// It counts the whole process's threads and descriptors, which other suites running at once move by tens (60
    /// descriptors, 20 threads seen under the whole suite), so it runs only in a process of its own:
    /// `COURIER_TEST_PROCESS_CENSUS=1 swift test --filter noLeaks`, as scripts/test.sh runs it.
    @Test(
        "start/shutdown cycles leave no threads or file descriptors behind",
        .enabled(if: measuresWholeProcess)
    )
    func noLeaks() async throws {
        // Warm up once so lazily created process-wide resources are not counted.
        let warmup = try await TestServer.start(.init(tls: true))
        _ = try await Curl.fetch(warmup.url("/bytes/1"), ["--insecure"])
        try await warmup.shutdown()
        let raw = try await RawServer.start(response: Data("HTTP/1.1 204 No Content\r\n\r\n".utf8))
        try await raw.shutdown()

        let threadsBefore = Self.count("/proc/self/task")
        let descriptorsBefore = Self.count("/proc/self/fd")
        let cycles = 25
        for cycle in 0..<cycles {
            let server = try await TestServer.start(.init(tls: cycle % 2 == 0))
            _ = try await Curl.fetch(server.url("/bytes/100?stall=5000"), ["--insecure"], maxTime: 0.1)
            _ = try await Curl.fetch(server.url("/bytes/100"), ["--insecure"])
            try await server.shutdown()
            let raw = try await RawServer.start(response: Data("HTTP/1.1 204 No Content\r\n\r\n".utf8))
            _ = try await Curl.fetch(raw.url("/"))
            try await raw.shutdown()
        }
        // A leak here grows by at least one per cycle (25) and never shrinks; what the servers' and curl's ends
        // leave for a moment (threads ending, connections closing) goes.
        var threadsAfter = Self.count("/proc/self/task")
        var descriptorsAfter = Self.count("/proc/self/fd")
        let deadline = ContinuousClock.now + .seconds(30)
        while threadsAfter - threadsBefore >= 12 || descriptorsAfter - descriptorsBefore >= 20,
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(200))
            threadsAfter = Self.count("/proc/self/task")
            descriptorsAfter = Self.count("/proc/self/fd")
        }
        #expect(threadsAfter - threadsBefore < 12, "threads \(threadsBefore) -> \(threadsAfter)")
        #expect(descriptorsAfter - descriptorsBefore < 20, "descriptors \(descriptorsBefore) -> \(descriptorsAfter)")
    }

    static func count(_ directory: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
    }
}
