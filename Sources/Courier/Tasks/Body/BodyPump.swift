import CourierConcurrency
import Foundation

/// Feeds one exchange's streamed request body to its transfer: reads the body's source and supplies the backend,
/// keeping at most ``window`` bytes supplied and not yet taken by the engine, so that a body of any length is sent
/// with bounded memory and a slow network slows the reading (backpressure towards the source), while a slow source
/// slows the sending (the engine's read waits for bytes).
///
/// Driven by callbacks, not a Swift task of its own: a read is asked when the window has room and none is under way
/// (``pumpMore()``), after the start, after each read, and when the engine took bytes (``taken(_:)``, from the task's
/// `sent` count after every input). An `InputStream` is read on its reader's queue, so the body goes out even when
/// Swift's cooperative threads are all busy. Stopped when the task ends or another exchange replaces it.
final class BodyPump: BodySupplier {
    /// Bytes supplied and not yet sent, at most.
    static let window: Int64 = 1 << 20
    /// Bytes read from the source at a time.
    static let chunk = 64 << 10

    /// The exchange it feeds.
    let hop: Int
    /// Where the exchange's body starts in the whole body (a resumed upload's rest).
    let bodyOffset: Int64

    private struct Feed {
        var reader: any BodyReader
        var backend: any TransferBackend
        var transfer: UInt64
        var length: Int64?
        var failed: @Sendable (CourierError) -> Void
    }

    private struct State {
        var feed: Feed?
        var supplied: Int64 = 0
        var taken: Int64 = 0
        var reading = false
        /// The end went out, the body failed, or the pump was stopped.
        var done = false
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
        let stopped = state.withLock { state -> Bool in
            guard !state.done else {
                return true
            }
            state.feed = Feed(reader: reader, backend: backend, transfer: transfer, length: length, failed: failed)
            return false
        }
        if stopped {
            reader.close()
            return
        }
        pumpMore()
    }

    /// The engine has taken `sent` bytes of this exchange's body.
    func taken(_ sent: Int64) {
        state.withLock { $0.taken = max($0.taken, sent) }
        pumpMore()
    }

    /// Reads no more (the task ended, or another exchange took over).
    func stop() {
        let reader = state.withLock { state -> (any BodyReader)? in
            guard !state.done else {
                return nil
            }
            state.done = true
            return state.feed?.reader
        }
        reader?.close()
    }

    /// Asks the reader for the next chunk when the window has room and no read is under way.
    private func pumpMore() {
        let feed = state.withLock { state -> Feed? in
            guard let feed = state.feed, !state.done, !state.reading, state.supplied - state.taken < Self.window else {
                return nil
            }
            state.reading = true
            return feed
        }
        guard let feed else {
            return
        }
        let want = feed.length.map { Int(min(Int64(Self.chunk), max($0 - state.withLock { $0.supplied }, 0) + 1)) }
        feed.reader.next(maximum: want ?? Self.chunk) { [self] result in
            read(result, feed: feed)
        }
    }

    /// A read came back: supply it (or the end), or fail. The read counts as under way until its bytes were supplied,
    /// so that no other read's bytes can be supplied before them.
    private func read(_ result: Result<Data?, any Error>, feed: Feed) {
        let outcome = state.withLock { state -> Result<(Data, end: Bool)?, CourierError> in
            guard !state.done else {
                return .success(nil)
            }
            switch result {
            case .failure(let error as CourierError):
                state.done = true
                return .failure(error)
            case .failure(let error):
                state.done = true
                return .failure(CourierError(.requestBodyStreamExhausted, "the body stream failed: \(error)"))
            case .success(nil):
                state.done = true
                if let length = feed.length, state.supplied != length {
                    return .failure(
                        CourierError(
                            .requestBodyStreamExhausted,
                            "the body stream ended after \(state.supplied) of the \(length) bytes its Content-Length "
                                + "announced"
                        )
                    )
                }
                return .success((Data(), end: true))
            case .success(let chunk?):
                state.supplied += Int64(chunk.count)
                if let length = feed.length, state.supplied > length {
                    state.done = true
                    return .failure(
                        CourierError(
                            .requestBodyStreamExhausted,
                            "the body stream gave more than the \(length) bytes its Content-Length announced"
                        )
                    )
                }
                return .success((chunk, end: false))
            }
        }
        switch outcome {
        case .success(nil):
            return
        case .failure(let error):
            feed.reader.close()
            feed.failed(error)
        case .success(let (bytes, end)?):
            guard feed.backend.supply(feed.transfer, bytes, end: end) else {
                state.withLock { $0.done = true }
                feed.reader.close()
                feed.failed(CourierError(.requestBodyStreamExhausted, "the body could not be handed to the transfer"))
                return
            }
            if end {
                feed.reader.close()
            } else {
                state.withLock { $0.reading = false }
                pumpMore()
            }
        }
    }
}
