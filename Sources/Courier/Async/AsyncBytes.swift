public import Foundation

/// The body of a response as an asynchronous sequence of bytes, from `Session.bytes(for:)`.
///
/// Iteration pulls chunks from a bounded buffer: a consumer that falls behind pauses the transfer (no bytes flow
/// until it catches up), so memory stays bounded whatever the body size. Dropping every iterator and the
/// sequence cancels the transfer; so does cancelling the consuming Swift task.
public struct AsyncBytes: AsyncSequence, Sendable {
    public typealias Element = UInt8

    /// The data task behind the sequence.
    public let task: DataTask
    let stream: ByteStream
    let lifetime: StreamLifetime

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: ByteStream
        let task: DataTask
        let lifetime: StreamLifetime
        var chunk = Data()
        var index = 0

        public mutating func next() async throws -> UInt8? {
            if index < chunk.count {
                defer { index += 1 }
                return chunk[chunk.startIndex + index]
            }
            guard let next = try await nextChunk() else {
                return nil
            }
            chunk = next
            index = 1
            return next[next.startIndex]
        }

        /// The next whole chunk of the body (an efficient alternative to byte-by-byte iteration), or nil at the end.
        /// Bytes of the current chunk not yet returned by ``next()`` are returned first.
        public mutating func nextChunk() async throws -> Data? {
            if index < chunk.count {
                let rest = chunk.subdata(in: (chunk.startIndex + index)..<chunk.endIndex)
                chunk = Data()
                index = 0
                return rest
            }
            let task = self.task
            let stream = self.stream
            while true {
                let next = try await withTaskCancellationHandler {
                    try await stream.next()
                } onCancel: {
                    task.cancel()
                }
                guard let next else {
                    return nil
                }
                if !next.isEmpty {
                    chunk = Data()
                    index = 0
                    return next
                }
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: stream, task: task, lifetime: lifetime)
    }
}

/// Cancels the transfer when the last sequence or iterator of a `bytes(for:)` call goes away.
final class StreamLifetime: Sendable {
    let task: SessionTask

    init(task: SessionTask) {
        self.task = task
    }

    deinit {
        task.cancel()
    }
}
