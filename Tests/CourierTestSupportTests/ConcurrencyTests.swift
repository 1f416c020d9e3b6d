import CourierTestSupport
import Foundation
import Testing

@Suite("Many concurrent connections")
struct ConcurrencyTests {
    @Test("1,200 connections open at once (4 curl processes × 300), every request answered", .timeLimit(.minutes(2)))
    func manyConnections() async throws {
        let server = try await TestServer.start()
        let perProcess = 300
        let outputs = try await withThrowingTaskGroup(of: Curl.Output.self) { group in
            for process in 0..<4 {
                group.addTask {
                    let urls = (0..<perProcess).flatMap { index in
                        ["-o", "/dev/null", server.url("/bytes/\(1000 + index)?seed=\(process)&stall=4000").absoluteString]
                    }
                    return try await Curl.run(
                        ["--parallel", "--parallel-immediate", "--parallel-max", "300", "--max-time", "60",
                         "-w", "%{http_code} %{size_download}\n"] + urls
                    )
                }
            }
            var outputs: [Curl.Output] = []
            for try await output in group {
                outputs.append(output)
            }
            return outputs
        }
        let requests = server.requests.count
        let connections = server.connectionCount
        let peak = server.peakOpenConnectionCount
        try await server.shutdown()

        for output in outputs {
            let lines = String(decoding: output.stdout, as: UTF8.self).split(separator: "\n")
            #expect(output.exitCode == 0, "\(output.stderr.prefix(500))")
            #expect(lines.count == perProcess)
            #expect(lines.allSatisfy { $0.hasPrefix("200 ") })
        }
        #expect(requests == 4 * perProcess)
        #expect(connections == 4 * perProcess, "every transfer in flight at once needs its own connection")
        // Under a sanitizer the server accepts several times slower; the overlap must still be far beyond one
        // process's 300.
        #expect(peak >= (runningUnderSanitizer ? 600 : 900), "each transfer stalls 4 s, so they overlap: peak \(peak)")
    }

    @Test("2,000 quick keep-alive requests over a few connections")
    func manyRequests() async throws {
        let server = try await TestServer.start()
        let urls = (0..<2000).flatMap { ["-o", "/dev/null", server.url("/bytes/\($0 % 500)?seed=\($0)").absoluteString] }
        let output = try await Curl.run(["--parallel", "--parallel-max", "50", "-w", "%{http_code}\n"] + urls)
        let requests = server.requests.count
        try await server.shutdown()

        let lines = String(decoding: output.stdout, as: UTF8.self).split(separator: "\n")
        #expect(output.exitCode == 0)
        #expect(lines.count == 2000)
        #expect(lines.allSatisfy { $0 == "200" })
        #expect(requests == 2000)
    }
}
