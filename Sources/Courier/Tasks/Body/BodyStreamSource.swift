import CourierConcurrency
import Foundation

/// Where a streamed request body comes from, for each exchange that sends it (a 307 or 308 redirect and an
/// authentication retry send it again).
enum BodyStreamSource: Sendable {
    /// `URLRequest.httpBodyStream`: this stream for the first exchange; a later one asks the task delegate's
    /// `needNewBodyStream`, as URLSession does.
    case inputStream(OneTimeBody<InputStreamReader>)
    /// `uploadTask(withStreamedRequest:)`: every exchange asks the task delegate.
    case delegate
    /// An async sequence of chunks (the swift-http-types API, the OpenAPI transport): read once, by the first
    /// exchange; an exchange after it fails with `requestBodyStreamExhausted`.
    case sequence(OneTimeBody<AsyncSequenceReader>)
}

/// A body reader that can be taken once (the first exchange takes it; a retry cannot read it again).
final class OneTimeBody<Reader: BodyReader>: Sendable {
    private let slot: LockedValue<Reader?>

    init(_ reader: Reader) {
        slot = LockedValue(reader)
    }

    /// The reader, the first time; nil after.
    func take() -> Reader? {
        slot.withLock { reader in
            defer { reader = nil }
            return reader
        }
    }
}

/// Reads a streamed body a chunk at a time. One read at a time (the body's ``BodyPump`` asks for the next chunk once
/// the last one came).
protocol BodyReader: Sendable {
    /// Reads the next bytes, at most `maximum` of them, and passes them to `completion` (nil at the end), once, on any
    /// thread.
    func next(maximum: Int, _ completion: @escaping @Sendable (Result<Data?, any Error>) -> Void)
    /// Gives the source up (its end, or the exchange's).
    func close()
}

/// An `InputStream`, read on a queue of its own: a stream's `read` blocks (a bound pair, a pipe) and must hold neither
/// an engine thread nor one of Swift's cooperative pool.
///
/// `@unchecked Sendable`: the stream is touched only on `queue`, serially (opened by the first read there, closed
/// there), never from two threads at once.
final class InputStreamReader: BodyReader, @unchecked Sendable {
    private let stream: InputStream
    private let queue = DispatchQueue(label: "Courier.InputStreamReader")
    private var opened = false

    init(_ stream: InputStream) {
        self.stream = stream
    }

    func next(maximum: Int, _ completion: @escaping @Sendable (Result<Data?, any Error>) -> Void) {
        queue.async { [self] in
            completion(Result { try read(maximum: maximum) })
        }
    }

    /// On `queue`.
    private func read(maximum: Int) throws -> Data? {
        if !opened {
            opened = true
            if stream.streamStatus == .notOpen {
                stream.open()
            }
        }
        var chunk = Data(count: maximum)
        let count = chunk.withUnsafeMutableBytes { buffer in
            stream.read(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: maximum)
        }
        if count < 0 {
            let reason = stream.streamError.map { "\($0)" } ?? "the stream failed"
            throw CourierError(.requestBodyStreamExhausted, "the body stream could not be read: \(reason)")
        }
        if count == 0 {
            return nil
        }
        chunk.count = count
        return chunk
    }

    func close() {
        queue.async { [self] in
            stream.close()
        }
    }
}

/// An async sequence of byte chunks, type-erased; each read is a Swift task of its own that takes the next element.
///
/// `@unchecked Sendable`: the iterator and `rest` are touched by one read at a time (the pump asks again only once a
/// read completed), so never from two threads at once.
final class AsyncSequenceReader: BodyReader, @unchecked Sendable {
    private let advance: () async throws -> Data?
    /// Bytes of the last element not handed out yet (an element larger than a read).
    private var rest = Data()

    init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element: DataProtocol {
        var iterator = chunks.makeAsyncIterator()
        advance = {
            guard let element = try await iterator.next() else {
                return nil
            }
            return Data(element)
        }
    }

    func next(maximum: Int, _ completion: @escaping @Sendable (Result<Data?, any Error>) -> Void) {
        guard rest.isEmpty else {
            completion(.success(take(maximum)))
            return
        }
        Task {
            do {
                guard let element = try await self.advance() else {
                    completion(.success(nil))
                    return
                }
                self.rest = element
                completion(.success(self.take(maximum)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    private func take(_ maximum: Int) -> Data {
        guard rest.count > maximum else {
            defer { rest = Data() }
            return rest
        }
        let chunk = Data(rest.prefix(maximum))
        rest = Data(rest.dropFirst(maximum))
        return chunk
    }

    func close() {}
}
