import CourierConcurrency
import Foundation

/// Feeds one exchange's streamed request body to its transfer: reads the body's source and supplies the backend,
/// keeping at most ``window`` bytes supplied and not yet taken by the engine, so that a body of any length is sent
/// with bounded memory and a slow network slows the reading (backpressure towards the source), while a slow source
/// slows the sending (the engine's read waits for bytes).
///
/// Started once per exchange (``SessionTask/startBodyStream(hop:transfer:bodyOffset:)``), told what the engine took
/// from the task's `sent` count after every input (``taken(_:)``), stopped when the task ends or another exchange
/// replaces it.
final class BodyPump: BodySupplier {
    /// Bytes supplied and not yet sent, at most.
    static let window: Int64 = 1 << 20
    /// Bytes read from the source at a time.
    static let chunk = 64 << 10

    /// The exchange it feeds.
    let hop: Int
    /// Where the exchange's body starts in the whole body (a resumed upload's rest).
    let bodyOffset: Int64

    private struct State {
        var supplied: Int64 = 0
        var taken: Int64 = 0
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
        var reading: Task<Void, Never>?
    }

    private let state = LockedValue(State())

    init(hop: Int, bodyOffset: Int64) {
        self.hop = hop
        self.bodyOffset = bodyOffset
    }

    /// Starts reading `reader` into `transfer`; `length`, when known, is checked against what the source gives.
    /// `failed` is called at most once, when the body cannot be sent as announced.
    func start(
        reader: any BodyReader,
        backend: any TransferBackend,
        transfer: UInt64,
        length: Int64?,
        failed: @escaping @Sendable (CourierError) -> Void
    ) {
        let reading = Task { [self] in
            defer { reader.close() }
            do {
                try await pump(reader, into: backend, transfer: transfer, length: length)
            } catch let error as CourierError {
                if !isStopped {
                    failed(error)
                }
            } catch {
                if !isStopped {
                    failed(CourierError(.requestBodyStreamExhausted, "the body stream failed: \(error)"))
                }
            }
        }
        let stopped = state.withLock { state -> Bool in
            state.reading = reading
            return state.stopped
        }
        if stopped {
            reading.cancel()
        }
    }

    /// The engine has taken `sent` bytes of this exchange's body.
    func taken(_ sent: Int64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.taken = max(state.taken, sent)
            guard state.supplied - state.taken < Self.window else {
                return nil
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Reads no more (the task ended, or another exchange took over).
    func stop() {
        let (waiter, reading) = state.withLock { state in
            state.stopped = true
            defer { state.waiter = nil }
            return (state.waiter, state.reading)
        }
        waiter?.resume()
        reading?.cancel()
    }

    private var isStopped: Bool {
        state.withLock { $0.stopped }
    }

    private func pump(_ reader: any BodyReader, into backend: any TransferBackend, transfer: UInt64, length: Int64?)
        async throws
    {
        var total: Int64 = 0
        while true {
            await roomInWindow()
            if isStopped {
                return
            }
            let want = length.map { Int(min(Int64(Self.chunk), max($0 - total, 0) + 1)) } ?? Self.chunk
            guard let chunk = try await reader.next(maximum: want) else {
                if let length, total != length {
                    throw CourierError(
                        .requestBodyStreamExhausted,
                        "the body stream ended after \(total) of the \(length) bytes its Content-Length announced"
                    )
                }
                guard backend.supply(transfer, Data(), end: true) else {
                    throw CourierError(.requestBodyStreamExhausted, "the body could not be handed to the transfer")
                }
                return
            }
            total += Int64(chunk.count)
            if let length, total > length {
                throw CourierError(
                    .requestBodyStreamExhausted,
                    "the body stream gave more than the \(length) bytes its Content-Length announced"
                )
            }
            state.withLock { $0.supplied += Int64(chunk.count) }
            guard backend.supply(transfer, chunk, end: false) else {
                throw CourierError(.requestBodyStreamExhausted, "the body could not be handed to the transfer")
            }
        }
    }

    /// Returns once fewer than ``window`` supplied bytes wait to be sent (or the pump stopped).
    private func roomInWindow() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.stopped || state.supplied - state.taken < Self.window {
                    return true
                }
                state.waiter = continuation
                return false
            }
            if ready {
                continuation.resume()
            }
        }
    }
}
