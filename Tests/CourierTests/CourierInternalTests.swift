import Foundation
import HTTPTypes
import Testing

// White-box tests: the only file of this target that uses `@testable`. Everything else tests the public API.
@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Internals: transfer identity and the backend seam")
struct TransferIdentityTests {
    @Test("engine tags carry the task and the hop, and come back as the same transfer id")
    func tags() {
        let id = TransferID(task: 123_456, hop: 17)
        let tag = Engine.tag(id)
        #expect(Int(tag >> Engine.hopBits) == 123_456)
        #expect(Engine.transferID(tag: tag) == id)
    }

    /// A value whose encoding drops a field.
    struct Lossy: Codable, Equatable {
        var kept: Int
        var dropped = 0
        enum CodingKeys: String, CodingKey { case kept }
    }

    @Test("the serialised backend carries events unchanged and refuses a value its encoding changes")
    func serialised() throws {
        let head = ResponseHead(status: 206, fields: ["Content-Range": "bytes 5-9/10"], setCookies: ["a=1"])
        let events = [
            TransferEvent(
                id: TransferID(task: 3, hop: 2),
                transfer: 41,
                progress: TransferProgress(received: 5, expectedToReceive: 10, sent: 0, expectedToSend: -1),
                payload: .response(held: true, resumeOffset: 5, head: head)
            ),
            TransferEvent(
                id: TransferID(task: 3, hop: 2),
                transfer: 41,
                progress: TransferProgress(),
                payload: .data(Data([1, 2, 3]))
            ),
            TransferEvent(
                id: TransferID(task: 3, hop: 2),
                transfer: 41,
                progress: TransferProgress(),
                payload: .complete(
                    TransferCompletion(error: CourierError(.timedOut, "slow", curlCode: 28), bytesOnDisk: 9)
                )
            ),
        ]
        #expect(SerialisedBackend.carry(events) == events)
        #expect(throws: CourierError.self) { try SerialisedBackend.carry(Lossy(kept: 1, dropped: 2)) }
        #expect(try SerialisedBackend.carry(Lossy(kept: 1)) == Lossy(kept: 1))
    }
}

@Suite("Internals: HTTP rules")
struct HTTPRuleTests {
    @Test("response heads: last status line wins, repeated fields join, Set-Cookie kept apart")
    func head() {
        let block =
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\n"
            + "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n"
        let head = Self.head(200, block)
        #expect(head.value("X-A") == "1, 2")
        #expect(head.setCookies == ["a=1", "b=2"])
        // Kept as received, one entry per line; joined only for HTTPURLResponse's dictionary.
        #expect(head.fieldLines.map(\.name) == ["X-A", "x-a", "Set-Cookie", "Set-Cookie"])
        #expect(head.fields == ["X-A": "1, 2", "Set-Cookie": "a=1, b=2"])
        let fields = head.httpResponse?.headerFields
        #expect(fields?[values: HTTPField.Name("x-a")!] == ["1", "2"])
        #expect(fields?[values: .setCookie] == ["a=1", "b=2"])
        #expect(head.httpVersion == "HTTP/1.1")
        let h2 = Self.head(200, "HTTP/2 200\r\netag: \"x\"\r\n\r\n")
        #expect(h2.httpVersion == "HTTP/2")
        #expect(h2.value("ETag") == "\"x\"")
    }

    @Test("response heads from raw bytes: LF-only lines, padding, no colon or no name, invalid UTF-8, nothing")
    func headFromBytes() {
        let raw: [UInt8] =
            Array("HTTP/1.0 204 No Content\n \tContent-Type :\t text/plain \r\nnot a field\r\nX-Bad: a".utf8)
            + [0xFF] + Array("b\r\n:empty-name\r\n\r\n".utf8)
        let head = raw.withUnsafeBytes { ResponseHead(status: 204, headerBytes: $0) }
        #expect(head.httpVersion == "HTTP/1.0")
        #expect(head.fields["Content-Type"] == "text/plain")
        #expect(head.value("x-bad") == "a\u{FFFD}b")
        #expect(head.fields.count == 2)

        let empty = ResponseHead(status: 200, headerBytes: UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(empty.fields.isEmpty)
        #expect(empty.httpVersion == "HTTP/1.1")
    }

    private static func head(_ status: Int, _ block: String) -> ResponseHead {
        Array(block.utf8).withUnsafeBytes { ResponseHead(status: status, headerBytes: $0) }
    }

    @Test("redirect method rewriting and header stripping")
    func redirects() throws {
        var post = URLRequest(url: URL(string: "https://a.example/x")!)
        post.httpMethod = "POST"
        post.httpBody = Data("b".utf8)
        post.setValue("secret", forHTTPHeaderField: "Authorization")
        post.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        let sameOrigin = URL(string: "https://a.example:443/y")!
        let otherOrigin = URL(string: "https://a.example:8443/y")!
        let r303 = RedirectPolicy.newRequest(from: TaskRequest(post), status: 303, target: sameOrigin)
        #expect(r303.method == "GET")
        #expect(r303.body == nil)
        #expect(r303.urlRequest.httpMethod == "GET")
        #expect(r303.urlRequest.httpBody == nil)
        #expect(r303.urlRequest.url == sameOrigin)
        #expect(r303.value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(r303.value(forHTTPHeaderField: "Authorization") == "secret")
        let r307 = RedirectPolicy.newRequest(from: TaskRequest(post), status: 307, target: otherOrigin)
        #expect(r307.method == "POST")
        #expect(r307.body == Data("b".utf8))
        #expect(r307.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(r307.urlRequest.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(r307.urlRequest.value(forHTTPHeaderField: "content-type") == "text/plain")
        #expect(RedirectPolicy.sameOrigin(URL(string: "http://h/")!, URL(string: "http://H:80/z")!))
        #expect(!RedirectPolicy.sameOrigin(URL(string: "http://h/")!, URL(string: "https://h/")!))
        #expect(
            RedirectPolicy.refusal(from: URL(string: "https://h/")!, to: URL(string: "http://h/")!)?.code
                == .insecureRedirect
        )
        #expect(
            RedirectPolicy.refusal(from: URL(string: "http://h/")!, to: URL(string: "ftp://h/")!)?.code
                == .unsupportedURL
        )
        #expect(RedirectPolicy.refusal(from: URL(string: "http://h/")!, to: URL(string: "https://h/")!) == nil)
    }

    @Test("strong validators")
    func validators() {
        #expect(ResumeData.strongValidator(etag: "\"abc\"", lastModified: nil, date: nil) == "\"abc\"")
        #expect(ResumeData.strongValidator(etag: "W/\"abc\"", lastModified: nil, date: nil) == nil)
        let lm = "Wed, 21 Oct 2015 07:28:00 GMT"
        #expect(ResumeData.strongValidator(etag: nil, lastModified: lm, date: "Wed, 21 Oct 2015 07:28:05 GMT") == lm)
        #expect(ResumeData.strongValidator(etag: nil, lastModified: lm, date: lm) == nil)
        #expect(ResumeData.strongValidator(etag: nil, lastModified: lm, date: nil) == nil)
    }

    @Test("challenge parsing prefers Digest and reads the realm")
    func challenges() {
        #expect(
            AuthenticationOffer.best(in: #"Basic realm="courier""#)
                == AuthenticationOffer(scheme: .basic, realm: "courier")
        )
        #expect(
            AuthenticationOffer.best(in: #"Digest realm="r", qop="auth", nonce="n", Basic realm="b""#)?.scheme
                == .digest
        )
        #expect(AuthenticationOffer.best(in: "Bearer realm=x") == nil)
    }

    @Test("resume data round trip and validation")
    func resumeData() throws {
        let resume = ResumeData(
            format: ResumeData.currentFormat,
            url: "http://h/x",
            originalURL: nil,
            method: "GET",
            headers: [:],
            file: "p.partial",
            bytesOnDisk: 10,
            validator: "\"v\"",
            expectedLength: 20
        )
        let data = try #require(resume.encoded())
        #expect(String(decoding: data, as: UTF8.self).contains(#""format":"courier-resume/1""#))
        #expect(try ResumeData.decode(data).get() == resume)
        var escaping = resume
        escaping.file = "../etc/passwd"
        #expect(throws: CourierError.self) { try ResumeData.decode(escaping.encoded()!).get() }
    }

    @Test("cookie matching")
    func cookies() throws {
        let storage = CookieStorage()
        let url = URL(string: "http://a.example/path/x")!
        storage.store(setCookieValues: ["a=1; Path=/", "b=2; Path=/other", "c=3; Secure"], from: url, policy: .always)
        let header = storage.cookieHeader(for: url)
        #expect(header == "a=1")
        #expect(storage.cookieHeader(for: URL(string: "https://a.example/other")!)?.contains("b=2") == true)
        #expect(storage.cookieHeader(for: URL(string: "http://b.example/")!) == nil)
    }
}

@Suite("Internals: unique file names")
struct UniqueFileNameTests {
    @Test("names are 32 lower-case hex digits, distinct across threads and across the pool's refills")
    func distinct() async {
        // 4 × 1,000 names: the pool refills every 16, so this crosses 250 refills under contention.
        let names = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<1_000).map { _ in UniqueFileName.make() } }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(Set(names).count == names.count)
        let hex = Set("0123456789abcdef")
        #expect(names.allSatisfy { $0.count == 32 && $0.allSatisfy(hex.contains) })
        // Random, not counted: every digit position takes many values (a counter's leading digits would not move).
        for position in 0..<32 {
            let digits = Set(names.map { Array($0)[position] })
            #expect(digits.count > 8, "position \(position) took \(digits.count) values")
        }
    }
}
