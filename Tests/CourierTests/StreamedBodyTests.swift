import Courier
import CourierConcurrency
import CourierTestSupport
import Crypto
import Foundation
import HTTPTypes
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Request bodies read as they are sent: `httpBodyStream`, `uploadTask(withStreamedRequest:)` with
/// `needNewBodyStream`, and async sequences on the swift-http-types API; chunked when the length is unknown, with
/// bounded memory whatever the length.
@Suite("Streamed request bodies")
struct StreamedBodyTests {
    /// What `/upload` answered.
    struct Uploaded: Equatable {
        var length: Int
        var sha256: String
    }

    static func uploaded(_ data: Data) -> Uploaded {
        let object = jsonObject(data)
        return Uploaded(length: object["length"] as? Int ?? -1, sha256: object["sha256"] as? String ?? "")
    }

    static func expected(count: Int) -> Uploaded {
        Uploaded(
            length: count,
            sha256: SHA256.hash(data: GeneratedStream.bytes(0 ..< count)).map { String(format: "%02x", $0) }.joined()
        )
    }

    static func uploadRequest(_ url: URL, length: Int? = nil) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        if let length {
            request.setValue(String(length), forHTTPHeaderField: "Content-Length")
        }
        return request
    }

    @Test("httpBodyStream: a data task sends the stream, chunked without a Content-Length, with one when it has one")
    func httpBodyStream() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let count = 3_000_017
            for announced in [nil, count] {
                var request = Self.uploadRequest(server.url("/upload"), length: announced)
                request.httpBodyStream = GeneratedStream(count: count)
                let (data, _) = try await session.data(for: request)
                #expect(Self.uploaded(data) == Self.expected(count: count))
            }
            let uploads = server.requests.filter { $0.path == "/upload" }
            #expect(uploads.count == 2)
            if TestProtocol.current == .http1 {
                #expect(uploads.first?.header("Transfer-Encoding") == "chunked")
                #expect(uploads.first?.header("Content-Length") == nil)
            }
            #expect(uploads.last?.header("Content-Length") == String(count))
        }
    }

    /// Gives a fresh stream of the body whenever asked, counts the asks, and keeps the response body and the end.
    final class StreamingDelegate: SessionDataDelegate, Sendable {
        let count: Int
        let asks = LockedValue(0)
        let body = LockedValue(Data())
        let ended = EventLog<CourierError.Code?>()

        init(count: Int) {
            self.count = count
        }

        func urlSession(
            _ session: Session,
            task: SessionTask,
            needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
        ) {
            asks.withLock { $0 += 1 }
            completionHandler(GeneratedStream(count: count))
        }

        func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
            body.withLock { $0.append(data) }
        }

        func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
            ended.append(CourierError.Code.of(error))
        }

        func urlSession(
            _ session: Session,
            didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            completionHandler(.performDefaultHandling, nil)
        }
    }

    @Test("uploadTask(withStreamedRequest:) asks the delegate for the stream, and again for the 307's exchange")
    func streamedRequestAndRedirect() async throws {
        try await withServer { server in
            let count = 500_000
            let delegate = StreamingDelegate(count: count)
            let session = Session(configuration: testConfiguration(), delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            let task = session.uploadTask(
                withStreamedRequest: Self.uploadRequest(server.url("/redirect-to?url=/upload&status=307"))
            )
            task.resume()
            let codes = try await delegate.ended.wait { !$0.isEmpty }
            #expect(codes == [nil])
            #expect(Self.uploaded(delegate.body.withLock { $0 }) == Self.expected(count: count))
            #expect(delegate.asks.withLock { $0 } == 2)
            #expect(task.countOfBytesSent == Int64(count))
        }
    }

    @Test("httpBodyStream after a 307: the delegate's new stream, or requestBodyStreamExhausted without one")
    func httpBodyStreamAndRedirect() async throws {
        try await withServer { server in
            let count = 200_000
            let url = server.url("/redirect-to?url=/upload&status=307")
            let delegate = StreamingDelegate(count: count)
            let session = Session(configuration: testConfiguration(), delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            var request = Self.uploadRequest(url)
            request.httpBodyStream = GeneratedStream(count: count)
            let (data, _) = try await session.data(for: request)
            #expect(Self.uploaded(data) == Self.expected(count: count))
            #expect(delegate.asks.withLock { $0 } == 1)

            let bare = Session(configuration: testConfiguration())
            defer { bare.finishTasksAndInvalidate() }
            request.httpBodyStream = GeneratedStream(count: count)
            await #expect(throws: CourierError.self) {
                do {
                    _ = try await bare.data(for: request)
                } catch let error as CourierError {
                    #expect(error.code == .requestBodyStreamExhausted)
                    throw error
                }
            }
        }
    }

    @Test("a stream that ends before its Content-Length fails with requestBodyStreamExhausted")
    func shortStream() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            var request = Self.uploadRequest(server.url("/upload"), length: 100_000)
            request.httpBodyStream = GeneratedStream(count: 99_999)
            do {
                _ = try await session.data(for: request)
                Issue.record("a short body succeeded")
            } catch let error as CourierError {
                #expect(error.code == .requestBodyStreamExhausted)
                #expect("\(error)".contains("99999 of the 100000"))
            }
        }
    }

    /// The sessions of the async-sequence tests: their bodies come from Swift tasks on the cooperative pool, which the
    /// whole suite running at once on two cores keeps busy for seconds at a time (CI saw both tests stall past the
    /// 20 s of `testConfiguration()` together, while another suite's threads spun on the pool). The idle timeout is
    /// not what they test.
    static func sequenceConfiguration() -> SessionConfiguration {
        var configuration = testConfiguration()
        configuration.timeoutIntervalForRequest = 120
        return configuration
    }

    @Test("swift-http-types: an async sequence body, chunked or with its length, both directions streamed")
    func asyncSequenceBody() async throws {
        try await withServer { server in
            let session = Session(configuration: Self.sequenceConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let count = 1_000_003
            var request = HTTPRequest(method: .put, url: server.url("/upload"))
            request.headerFields[.contentType] = "application/octet-stream"
            for length in [nil, Int64(count)] {
                let (data, response) = try await session.upload(
                    for: request,
                    body: GeneratedChunks(count: count, chunk: 70_000),
                    length: length
                )
                #expect(response.status == .ok)
                #expect(Self.uploaded(data) == Self.expected(count: count))
            }
            let (bytes, response) = try await session.bytes(
                for: request,
                body: GeneratedChunks(count: count, chunk: 4096)
            )
            #expect(response.status == .ok)
            var answer = Data()
            for try await byte in bytes {
                answer.append(byte)
            }
            #expect(Self.uploaded(answer) == Self.expected(count: count))
        }
    }

    /// Hears which task the session made for a call (`didCreateTask`).
    final class CreationDelegate: SessionTaskDelegate, Sendable {
        let task = LockedValue<SessionTask?>(nil)

        func urlSession(_ session: Session, didCreateTask task: SessionTask) {
            self.task.withLock { $0 = task }
        }
    }

    @Test("32 MiB from a sequence faster than the network: never read more than the window ahead of what was sent")
    func readAheadIsBounded() async throws {
        try await withServer { server in
            let session = Session(configuration: Self.sequenceConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let count = 32 << 20
            let chunk = 256 << 10
            let delegate = CreationDelegate()
            let made = LockedValue(0)
            let farthestAhead = LockedValue(Int64(0))
            var request = HTTPRequest(method: .put, url: server.url("/upload"))
            request.headerFields[.contentType] = "application/octet-stream"
            let chunks = GeneratedChunks(count: count, chunk: chunk, repeating: true) {
                let sent = delegate.task.withLock { $0 }?.countOfBytesSent ?? 0
                let ahead = Int64(made.withLock { $0 }) - sent
                farthestAhead.withLock { $0 = max($0, ahead) }
                made.withLock { $0 += chunk }
            }
            let (data, _) = try await session.upload(for: request, body: chunks, delegate: delegate)
            #expect(jsonObject(data)["length"] as? Int == count)
            // The pump's window (1 MiB) plus the chunk being read and what the engine took but had not reported yet
            // (a progress event per loop turn): a source that ran free would be tens of MiB ahead.
            let ahead = farthestAhead.withLock { $0 }
            #expect(ahead <= 4 << 20, "read \(ahead >> 10) KiB ahead of what was sent")
        }
    }
}

/// An input stream of `count` generated bytes (byte i is `(i * 7 + i / 251) & 255`), made as it is read: a body of
/// any length without holding it.
final class GeneratedStream: InputStream {
    private let count: Int
    private var position = 0
    private var status = Stream.Status.notOpen

    init(count: Int) {
        self.count = count
        super.init(data: Data())
    }

    static func bytes(_ range: Range<Int>) -> Data {
        Data(range.map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 251) })
    }

    override func open() {
        status = .open
    }

    override func close() {
        status = .closed
    }

    override var streamStatus: Stream.Status {
        status
    }

    override var hasBytesAvailable: Bool {
        position < count
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let length = Swift.min(maxLength, count - position)
        for offset in 0 ..< length {
            let index = position + offset
            buffer[offset] = UInt8(truncatingIfNeeded: index &* 7 &+ index / 251)
        }
        position += length
        if position == count {
            status = .atEnd
        }
        return length
    }
}

/// `count` generated bytes (as ``GeneratedStream``) in chunks of `chunk`, made as they are asked for, or (`repeating`)
/// the first chunk's bytes over and over (cheap enough for hundreds of MiB in a debug build); `onChunk` runs before
/// each.
struct GeneratedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let count: Int
    let chunk: Int
    var repeating = false
    var onChunk: @Sendable () -> Void = {}

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        let chunk: Int
        let block: Data?
        let onChunk: @Sendable () -> Void
        var position = 0

        mutating func next() async throws -> Data? {
            guard position < count else {
                return nil
            }
            onChunk()
            let end = Swift.min(count, position + chunk)
            defer { position = end }
            if let block {
                return end - position == block.count ? block : block.prefix(end - position)
            }
            return GeneratedStream.bytes(position ..< end)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        let block = repeating ? GeneratedStream.bytes(0 ..< chunk) : nil
        return AsyncIterator(count: count, chunk: chunk, block: block, onChunk: onChunk)
    }
}
