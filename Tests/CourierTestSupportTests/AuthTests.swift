import CourierTestSupport
import Foundation
import Testing

@Suite("Basic and Digest authentication")
struct AuthTests {
    @Test("Basic: 401 with a challenge, 200 with the right credentials, 401 with wrong ones")
    func basic() async throws {
        let server = try await TestServer.start()
        let url = server.url("/basic-auth/alice/s3cret")
        let anonymous = try await Curl.fetch(url)
        let good = try await Curl.fetch(url, ["-u", "alice:s3cret"])
        let wrong = try await Curl.fetch(url, ["-u", "alice:nope"])
        try await server.shutdown()

        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate") == "Basic realm=\"courier\"")
        #expect(good.status == 200)
        #expect(try good.json()["authenticated"] as? Bool == true)
        #expect(try good.json()["user"] as? String == "alice")
        #expect(wrong.status == 401)
    }

    @Test("NTLM: curl --ntlm succeeds with the right password and fails with a wrong one")
    func ntlmWithCurl() async throws {
        let server = try await TestServer.start()
        let url = server.url("/ntlm-auth/erin/n7lm!")
        let good = try await Curl.fetch(url, ["--ntlm", "-u", "erin:n7lm!"])
        let wrong = try await Curl.fetch(url, ["--ntlm", "-u", "erin:wrong"])
        let anonymous = try await Curl.fetch(url)
        try await server.shutdown()

        #expect(good.status == 200)
        #expect(try good.json()["user"] as? String == "erin")
        #expect(wrong.status == 401)
        #expect(anonymous.status == 401 && anonymous.header("WWW-Authenticate") == "NTLM")
    }

    @Test("MD4 (NTLM's NT hash) gives RFC 1320's answers")
    func md4() {
        func hex(_ text: String) -> String {
            MD4.hash(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        #expect(hex("") == "31d6cfe0d16ae931b73c59d7e0c089c0")
        #expect(hex("abc") == "a448017aaf21d8525fc10ae87aa6729d")
        #expect(hex("message digest") == "d9130a8164549fe818874806e1c7014b")
        #expect(hex(String(repeating: "1234567890", count: 8)) == "e33b4ddc9c38f2199c3e7b164fcc0536")
    }

    @Test("Digest: curl --digest succeeds with the right password and fails with a wrong one")
    func digestWithCurl() async throws {
        let server = try await TestServer.start()
        let url = server.url("/digest-auth/bob/pa55word")
        let good = try await Curl.fetch(url, ["--digest", "-u", "bob:pa55word"])
        let wrong = try await Curl.fetch(url, ["--digest", "-u", "bob:wrong"])
        let wrongUser = try await Curl.fetch(url, ["--digest", "-u", "eve:pa55word"])
        try await server.shutdown()

        #expect(good.status == 200)
        #expect(try good.json()["user"] as? String == "bob")
        let challenge = try #require(good.headBlocks.first.flatMap { block in
            block.first { $0.0.lowercased() == "www-authenticate" }?.1
        })
        #expect(challenge.hasPrefix("Digest realm=\"courier\", qop=\"auth\", algorithm=MD5, nonce=\""))
        #expect(wrong.status == 401)
        #expect(wrongUser.status == 401)
    }

    @Test("Digest with algorithm=SHA-256 works with curl too")
    func digestSHA256() async throws {
        let server = try await TestServer.start()
        let transfer = try await Curl.fetch(server.url("/digest-auth/bob/pw?algorithm=SHA-256"), ["--digest", "-u", "bob:pw"])
        try await server.shutdown()

        #expect(transfer.status == 200)
    }

    @Test("Digest is checked by RFC 7616: an answer computed with md5sum passes, for issued nonces only")
    func digestByHand() async throws {
        let server = try await TestServer.start()
        let uri = "/digest-auth/carol/hunter2"
        let challengeResponse = try await Curl.fetch(server.url(uri))
        let challenge = try #require(challengeResponse.header("WWW-Authenticate"))
        let nonce = try #require(Self.parameter("nonce", in: challenge))
        let opaque = try #require(Self.parameter("opaque", in: challenge))

        func authorization(nonce: String, password: String) throws -> String {
            let ha1 = try Shell.md5("carol:courier:\(password)")
            let ha2 = try Shell.md5("GET:\(uri)")
            let response = try Shell.md5("\(ha1):\(nonce):00000001:abcdef:auth:\(ha2)")
            return "Authorization: Digest username=\"carol\", realm=\"courier\", nonce=\"\(nonce)\", "
                + "uri=\"\(uri)\", qop=auth, nc=00000001, cnonce=\"abcdef\", response=\"\(response)\", "
                + "opaque=\"\(opaque)\", algorithm=MD5"
        }
        let good = try await Curl.fetch(server.url(uri), ["-H", try authorization(nonce: nonce, password: "hunter2")])
        let bad = try await Curl.fetch(server.url(uri), ["-H", try authorization(nonce: nonce, password: "hunter3")])
        let unknownNonce = try await Curl.fetch(
            server.url(uri),
            ["-H", try authorization(nonce: "00112233445566778899aabbccddeeff", password: "hunter2")]
        )
        try await server.shutdown()

        #expect(challengeResponse.status == 401)
        #expect(good.status == 200)
        #expect(bad.status == 401)
        #expect(unknownNonce.status == 401)
        #expect(unknownNonce.header("WWW-Authenticate")?.hasSuffix("stale=true") == true)
    }

    @Test("every Digest challenge carries a fresh nonce")
    func freshNonces() async throws {
        let server = try await TestServer.start()
        let first = try await Curl.fetch(server.url("/digest-auth/a/b"))
        let second = try await Curl.fetch(server.url("/digest-auth/a/b"))
        try await server.shutdown()

        let nonces = [first, second].compactMap { $0.header("WWW-Authenticate").flatMap { Self.parameter("nonce", in: $0) } }
        try #require(nonces.count == 2)
        #expect(nonces[0] != nonces[1])
        #expect(nonces.allSatisfy { $0.count == 32 })
    }

    /// The quoted value of `name` in a challenge.
    static func parameter(_ name: String, in challenge: String) -> String? {
        guard let start = challenge.range(of: "\(name)=\"") else { return nil }
        let rest = challenge[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}
