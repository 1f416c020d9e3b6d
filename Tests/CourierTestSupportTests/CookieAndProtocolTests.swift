import CourierTestSupport
import Foundation
import Testing

@Suite("Cookies, /garbage and /h2 on plain HTTP")
struct CookieAndProtocolTests {
    @Test("/cookies/set sets each pair; /cookies answers what the request carried")
    func cookies() async throws {
        let jar = FileManager.default.temporaryDirectory.appendingPathComponent("courier-jar-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: jar) }
        let server = try await TestServer.start()
        let set = try await Curl.fetch(server.url("/cookies/set?flavour=oat&count=3"), ["-c", jar.path])
        let list = try await Curl.fetch(server.url("/cookies"), ["-b", jar.path])
        let direct = try await Curl.fetch(server.url("/cookies"), ["-H", "Cookie: a=1; b=two"])
        try await server.shutdown()

        #expect(set.status == 200)
        #expect(set.headerValues("Set-Cookie") == ["flavour=oat; Path=/", "count=3; Path=/"])
        let carried = try list.json()
        #expect(carried["flavour"] as? String == "oat")
        #expect(carried["count"] as? String == "3")
        let directJSON = try direct.json()
        #expect(directJSON["a"] as? String == "1")
        #expect(directJSON["b"] as? String == "two")
    }

    @Test("/garbage answers bytes that are not HTTP and closes; curl fails")
    func garbage() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/garbage"))
        let after = try await Curl.fetch(server.url("/bytes/4"))
        try await server.shutdown()

        #expect(transfer.exitCode != 0)
        #expect(transfer.status == 0)
        #expect(after.exitCode == 0)
    }

    @Test("/h2 on plain HTTP says 1.1 (and 1.0 for an HTTP/1.0 request)")
    func protocolVersion() async throws {
        let server = try await TestServer.start()
        let http11 = try await Curl.fetch(server.url("/h2"))
        let http10 = try await Curl.fetch(server.url("/h2"), ["--http1.0"])
        try await server.shutdown()

        #expect(try http11.json()["httpVersion"] as? String == "1.1")
        #expect(try http10.json()["httpVersion"] as? String == "1.0")
        #expect(http10.header("Connection") == "close")
    }
}
