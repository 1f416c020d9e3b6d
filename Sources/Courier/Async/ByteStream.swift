import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bounded buffer between a `bytes(for:)` transfer (producer, loop threads) and its consumer.
///
/// When more than ``highWatermark`` bytes wait, the producer asks the task to pause the transfer; when the
/// consumer has drained the buffer below ``lowWatermark``, the transfer resumes. Memory stays bounded by the
/// high watermark plus what the engine had in flight.
final class ByteStream: Sendable {
    static let highWatermark = 1 << 20
    static let lowWatermark = 256 << 10

    private struct State {
        var chunks: [Data] = []
        var head = 0
        var buffered = 0
        var paused = false
        var finished = false
        var error: CourierError?
        var response: TaskResponse?
        var responseWaiter: CheckedContinuation<TaskResponse, any Error>?
        var chunkWaiter: CheckedContinuation<Data?, any Error>?
    }

    private let state = LockedValue(State())
    /// Resumes the transfer when the consumer caught up; set once the task exists.
    private let onDrained = LockedValue<(@Sendable () -> Void)?>(nil)

    func setDrainedHandler(_ handler: @escaping @Sendable () -> Void) {
        onDrained.withLock { $0 = handler }
    }

    // MARK: Producer

    func receive(_ response: TaskResponse) {
        let waiter = state.withLock { state -> CheckedContinuation<TaskResponse, any Error>? in
            state.response = response
            defer { state.responseWaiter = nil }
            return state.responseWaiter
        }
        waiter?.resume(returning: response)
    }

    /// Appends a chunk; returns true when the transfer should pause.
    func append(_ data: Data) -> Bool {
        guard !data.isEmpty else {
            return false
        }
        let (waiter, pause) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, Bool) in
            if let waiter = state.chunkWaiter {
                state.chunkWaiter = nil
                return (waiter, false)
            }
            state.chunks.append(data)
            state.buffered += data.count
            if state.buffered > ByteStream.highWatermark && !state.paused {
                state.paused = true
                return (nil, true)
            }
            return (nil, false)
        }
        waiter?.resume(returning: data)
        return pause
    }

    func finish(error: CourierError?) {
        let (responseWaiter, chunkWaiter) = state.withLock { state in
            state.finished = true
            state.error = error
            defer {
                state.responseWaiter = nil
                state.chunkWaiter = nil
            }
            return (state.responseWaiter, state.chunkWaiter)
        }
        if let responseWaiter {
            responseWaiter.resume(throwing: error ?? CourierError(.badServerResponse, "no response"))
        }
        if let chunkWaiter {
            if let error {
                chunkWaiter.resume(throwing: error)
            } else {
                chunkWaiter.resume(returning: nil)
            }
        }
    }

    // MARK: Consumer

    func response() async throws -> TaskResponse {
        try await withCheckedThrowingContinuation { continuation in
            let result = state.withLock { state -> Result<TaskResponse, any Error>? in
                if let response = state.response {
                    return .success(response)
                }
                if state.finished {
                    return .failure(state.error ?? CourierError(.badServerResponse, "no response"))
                }
                state.responseWaiter = continuation
                return nil
            }
            if let result {
                continuation.resume(with: result)
            }
        }
    }

    /// The next chunk, nil at the end; throws the task's error.
    func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { continuation in
            let (result, resume) = state.withLock { state -> (Result<Data?, any Error>?, Bool) in
                if state.head < state.chunks.count {
                    let chunk = state.chunks[state.head]
                    state.chunks[state.head] = Data()
                    state.head += 1
                    state.buffered -= chunk.count
                    if state.head > 64 && state.head * 2 > state.chunks.count {
                        state.chunks.removeFirst(state.head)
                        state.head = 0
                    }
                    var resume = false
                    if state.paused && state.buffered < ByteStream.lowWatermark {
                        state.paused = false
                        resume = true
                    }
                    return (.success(chunk), resume)
                }
                if state.finished {
                    if let error = state.error {
                        return (.failure(error), false)
                    }
                    return (.success(nil), false)
                }
                state.chunkWaiter = continuation
                return (nil, false)
            }
            if resume {
                onDrained.withLock { $0 }?()
            }
            if let result {
                continuation.resume(with: result)
            }
        }
    }

    /// Bytes waiting in the buffer (for tests of backpressure).
    var bufferedByteCount: Int {
        state.withLock { $0.buffered }
    }
}
