import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Cookie files (Netscape format)", .timeLimit(.minutes(1)))
struct CookieFileTests {
    @Test("cookies a session stored are in the file, read back by a new session and by curl -b")
    func roundTrip() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cookies-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("jar.txt")
        try await withServer { server in
            var configuration = testConfiguration()
            let jar = try CookieStorage(persistingTo: file)
            configuration.httpCookieStorage = jar
            let first = Session(configuration: configuration)
            _ = try await first.data(from: server.url("/cookies/set?flavour=oat&count=3"))
            first.invalidateAndCancel()
            jar.synchronize()
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.hasPrefix("# Netscape HTTP Cookie File"))
            #expect(text.contains("\tflavour\toat") && text.contains("\tcount\t3"))
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            var again = testConfiguration()
            again.httpCookieStorage = try CookieStorage(persistingTo: file)
            let second = Session(configuration: again)
            defer { second.invalidateAndCancel() }
            let (echo, _) = try await second.data(from: server.url("/headers"))
            let sent = jsonObject(echo)["cookie"] as? String ?? ""
            #expect(sent.contains("flavour=oat") && sent.contains("count=3"), "\(sent)")

            // curl reads the same file.
            var arguments = ["-s", "-b", file.path]
            if server.baseURL.scheme == "https", let authority = server.certificateAuthority {
                let pem = folder.appendingPathComponent("ca.pem")
                try authority.pem.write(to: pem)
                arguments += ["--cacert", pem.path]
            }
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = arguments + [server.url("/headers").absoluteString]
            let output = Pipe()
            curl.standardOutput = output
            try curl.run()
            let curlEcho = output.fileHandleForReading.readDataToEndOfFile()
            curl.waitUntilExit()
            #expect(curl.terminationStatus == 0)
            let curlSent = jsonObject(curlEcho)["cookie"] as? String ?? ""
            #expect(curlSent.contains("flavour=oat") && curlSent.contains("count=3"), "\(curlSent)")
        }
    }

    @Test("a file curl -c wrote is read: domain and host-only cookies, HttpOnly, comments; bad lines are skipped")
    func readsCurlsFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cookies-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let lines = [
            "# Netscape HTTP Cookie File",
            "# https://curl.se/docs/http-cookies.html",
            "",
            ".example.com\tTRUE\t/\tFALSE\t0\tsession\tone",
            "#HttpOnly_api.example.com\tFALSE\t/v1\tTRUE\t4102444800\ttoken\tabc",
            "not a cookie line",
            "example.org\tFALSE\t/\tFALSE\tsoon\tbad\texpiry",
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let jar = CookieStorage()
        try jar.readNetscapeFile(at: file)
        #expect(jar.cookies.count == 2)
        let sent = jar.cookies(for: URL(string: "https://api.example.com/v1/items")!).map(\.name).sorted()
        #expect(sent == ["session", "token"])
        #expect(jar.cookies(for: URL(string: "http://api.example.com/v1/items")!).map(\.name) == ["session"])
        #expect(jar.cookies(for: URL(string: "https://www.example.com/")!).map(\.name) == ["session"])
        let token = try #require(jar.cookies.first { $0.name == "token" })
        #expect(token.isHTTPOnly && token.isSecure && token.domain == "api.example.com")
        #expect(throws: (any Error).self) {
            try jar.readNetscapeFile(at: file.appendingPathExtension("missing"))
        }
    }
}
