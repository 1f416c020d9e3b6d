import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Download checksums: an expected digest, one the server announces (RFC 9530, RFC 3230), a resumed file whose
/// prefix on disk is hashed too, and the mismatch that hands nothing over.
@Suite("Checksums", .timeLimit(.minutes(1)))
struct ChecksumTests {
    static func sha256(_ data: Data) -> Checksum {
        Checksum("sha-256=" + TestServer.sha256Hex(data))!
    }

    static func sha512(_ data: Data) -> Checksum {
        Checksum("sha-512=" + TestServer.sha512Hex(data))!
    }

    /// The downloaded files the delegate saw for `task`.
    static func files(_ delegate: RecordingDelegate, _ task: SessionTask) -> [Data?] {
        delegate.downloadedFiles(of: task)
    }

    @Test("Checksum parses sha-256=HEX, sha512:HEX and refuses wrong lengths and names")
    func parsing() {
        let hex = String(repeating: "ab", count: 32)
        #expect(Checksum("sha-256=" + hex)?.hex == hex)
        #expect(Checksum("SHA256:" + hex)?.algorithm == .sha256)
        #expect(Checksum("sha512=" + hex + hex)?.algorithm == .sha512)
        #expect(Checksum("sha-256=" + hex.dropLast(2)) == nil)
        #expect(Checksum("md5=" + hex) == nil)
        #expect(Checksum("sha-256=zz" + hex.dropFirst(2)) == nil)
        #expect(Checksum("sha-256=" + hex)?.description == "sha-256=" + hex)
        // Every digit as a byte's high nibble and as its low one, written back in lower case.
        let everyDigit = String(repeating: "0123456789abcdeffedcba9876543210", count: 2)
        #expect(Checksum("sha-256=" + everyDigit.uppercased())?.hex == everyDigit)
    }

    @Test("an expected SHA-256 or SHA-512 that matches hands the file over", arguments: ["sha-256", "sha-512"])
    func expectedMatches(_ algorithm: String) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: 3_000_001, seed: 31)
            let task = session.downloadTask(with: server.url("/bytes/3000001?seed=31"))
            task.expectedChecksum = algorithm == "sha-256" ? Self.sha256(body) : Self.sha512(body)
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect(Self.files(delegate, task) == [body])
        }
    }

    @Test("an expected checksum that differs fails with checksumMismatch: no file, no resume data")
    func expectedDiffers() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.downloadTask(with: server.url("/bytes/100000?seed=32"))
            task.expectedChecksum = Self.sha256(TestServer.bytes(count: 100_000, seed: 33))
            task.resume()
            let error = try #require(try await delegate.completion(of: task))
            #expect(error.code == .checksumMismatch)
            #expect(error.resumeData == nil)
            #expect(error.message.contains(TestServer.sha256Hex(TestServer.bytes(count: 100_000, seed: 32))))
            #expect(Self.files(delegate, task).isEmpty)
        }
    }

    @Test(
        "a digest the server announces is checked: Repr-Digest, Content-Digest, Digest; a wrong one fails",
        arguments: [
            ("repr-digest:sha-256", false), ("repr-digest:sha-512", false), ("content-digest:sha-256", false),
            ("digest:sha-512", false), ("repr-digest:sha-256", true), ("digest:sha-256", true),
        ]
    )
    func announced(_ announce: String, wrong: Bool) async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let path = "/bytes/777777?seed=34&announce=\(announce)" + (wrong ? "&wrongDigest=1" : "")
            let task = session.downloadTask(with: server.url(path))
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error?.code == (wrong ? .checksumMismatch : nil))
            #expect(Self.files(delegate, task) == (wrong ? [] : [TestServer.bytes(count: 777_777, seed: 34)]))
        }
    }

    @Test("a resumed download is checked over the whole file: the prefix on disk, then the range")
    func resumedWholeFile() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: 600_000, seed: 35)
            let first = session.downloadTask(with: server.url("/bytes/600000?seed=35&cut=250000"))
            first.expectedChecksum = Self.sha256(body)
            first.resume()
            let cut = try #require(try await delegate.completion(of: first))
            #expect(cut.code == .networkConnectionLost)
            let resumeData = try #require(cut.resumeData)
            let edited = try rewriteResumeURL(resumeData) { $0.replacingOccurrences(of: "&cut=250000", with: "") }
            // A wrong expectation fails the resumed file …
            let wrong = session.downloadTask(withResumeData: edited)
            wrong.expectedChecksum = Self.sha256(Data())
            wrong.resume()
            let wrongError = try await delegate.completion(of: wrong)
            #expect(wrongError?.code == .checksumMismatch, "\(String(describing: wrongError))")
            #expect(Self.files(delegate, wrong).isEmpty)
            // … and the right one passes (a fresh cut, since the failed file is gone).
            let again = session.downloadTask(with: server.url("/bytes/600000?seed=35&cut=250000"))
            again.resume()
            let second = try #require(try await delegate.completion(of: again)?.resumeData)
            let resumed = session.downloadTask(
                withResumeData: try rewriteResumeURL(second) { $0.replacingOccurrences(of: "&cut=250000", with: "") }
            )
            resumed.expectedChecksum = Self.sha512(body)
            resumed.resume()
            let resumedError = try await delegate.completion(of: resumed)
            #expect(resumedError == nil, "\(String(describing: resumedError))")
            #expect(server.requests.last?.header("Range") == "bytes=250000-")
            #expect(Self.files(delegate, resumed) == [body])
        }
    }
}
