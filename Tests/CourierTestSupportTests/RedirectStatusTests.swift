import CourierTestSupport
import Foundation
import Testing

@Suite("Redirects and /status")
struct RedirectStatusTests {
    @Test("/redirect/3 takes 3 redirects in all and ends at /bytes/16")
    func hops() async throws {
        let server = try await TestServer.start()
        let followed = try await Curl.fetch(server.url("/redirect/3"), ["-L"])
        let first = try await Curl.fetch(server.url("/redirect/3"))
        try await server.shutdown()

        #expect(followed.exitCode == 0)
        #expect(followed.redirects == 3)
        #expect(followed.effectiveURL == server.url("/bytes/16").absoluteString)
        #expect(followed.body == TestServer.bytes(count: 16))
        #expect(first.status == 302)
        #expect(first.header("Location") == "/redirect/2")
    }

    @Test("/redirect/N keeps to= and status= on every hop")
    func hopsWithOptions() async throws {
        let server = try await TestServer.start()
        let first = try await Curl.fetch(server.url("/redirect/2?to=/bytes/32&status=307"))
        let followed = try await Curl.fetch(server.url("/redirect/2?to=/bytes/32&status=307"), ["-L"])
        try await server.shutdown()

        #expect(first.status == 307)
        #expect(first.header("Location") == "/redirect/1?to=/bytes/32&status=307")
        #expect(followed.redirects == 2)
        #expect(followed.body == TestServer.bytes(count: 32))
    }

    @Test("/redirect-to sends one redirect to an absolute or relative URL")
    func redirectTo() async throws {
        let server = try await TestServer.start()
        let target = server.url("/bytes/8?seed=2").absoluteString
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let absolute = try await Curl.fetch(server.url("/redirect-to?url=\(encoded)&status=301"))
        let followed = try await Curl.fetch(server.url("/redirect-to?url=\(encoded)"), ["-L"])
        let relative = try await Curl.fetch(server.url("/redirect-to?url=%2Fbytes%2F4&status=303"), ["-L"])
        try await server.shutdown()

        #expect(absolute.status == 301)
        #expect(absolute.header("Location") == target)
        #expect(followed.redirects == 1)
        #expect(followed.body == TestServer.bytes(count: 8, seed: 2))
        #expect(relative.redirects == 1)
        #expect(relative.body == TestServer.bytes(count: 4))
    }

    @Test("/redirect-loop never ends: curl stops at --max-redirs (47)")
    func loop() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/redirect-loop"), ["-L", "--max-redirs", "5"])
        try await server.shutdown()

        #expect(transfer.exitCode == 47)
        #expect(server.requests.count == 6)
    }

    @Test("/status/CODE answers that code, with Retry-After when asked")
    func status() async throws {
        let server = try await TestServer.start()
        let unavailable = try await Curl.fetch(server.url("/status/503?retryAfter=7"))
        let created = try await Curl.fetch(server.url("/status/201"), ["-X", "POST", "--data", "x"])
        let noContent = try await Curl.fetch(server.url("/status/204"))
        try await server.shutdown()

        #expect(unavailable.status == 503)
        #expect(unavailable.header("Retry-After") == "7")
        #expect(unavailable.text == "503 Service Unavailable\n")
        #expect(created.status == 201)
        #expect(noContent.status == 204)
        #expect(noContent.body.isEmpty)
        #expect(noContent.header("Content-Length") == nil)
    }
}
