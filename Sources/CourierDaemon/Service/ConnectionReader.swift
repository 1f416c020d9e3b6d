import Courier
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What courierd reads from one connection: frames decoded as the socket delivers them, on the connection's own reader
/// queue, woken by a read source (no thread waits on an idle connection).
///
/// Each time the socket has bytes, everything it holds is read without blocking and decoded; the messages of that
/// read go to `handle` together, in order (``DaemonServer/handle(_:on:)`` takes a run of `createTask` frames as one).
/// The reading ends when the peer closes, a frame is bad (the peer gets a `failure` first, after the messages before
/// it were handled), or `handle` answers why the connection must close; then `ended` is called once, on the reader
/// queue, after the read source is gone (the descriptor may then be closed).
///
/// `@unchecked Sendable`: `decoder`, `buffer`, `source` and `ending` are touched only on `queue`; the rest is constant.
final class ConnectionReader: @unchecked Sendable {
    private let descriptor: Int32
    private let queue: DispatchQueue
    private let handle: ([IPCMessage]) -> String?
    private let failure: (CourierError) -> Void
    private let ended: (String) -> Void
    private var decoder = IPCFrameDecoder()
    /// What one `recv` reads into (64 KiB), kept from one wake to the next.
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)
    private var source: (any DispatchSourceRead)?
    private var ending: String?

    /// `failure` answers a bad frame (queued before the reading ends).
    init(
        descriptor: Int32,
        handle: @escaping ([IPCMessage]) -> String?,
        failure: @escaping (CourierError) -> Void,
        ended: @escaping (String) -> Void
    ) {
        self.descriptor = descriptor
        self.handle = handle
        self.failure = failure
        self.ended = ended
        queue = DispatchQueue(label: "courierd.connection.\(descriptor).reader")
    }

    /// Starts reading; call once.
    func start() {
        queue.async { [self] in
            let made = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            made.setEventHandler { [self] in readAvailable() }
            made.setCancelHandler { [self] in
                // Once: the source is gone, and with it the last reference the queue's work holds to this reader.
                source = nil
                ended(ending ?? "the connection ended")
            }
            source = made
            made.activate()
        }
    }

    /// Reads what the socket holds, without blocking, and hands over its messages.
    private func readAvailable() {
        while ending == nil {
            let count: Int
            switch UnixSocket.receiveAvailable(from: descriptor, into: &buffer) {
            case .bytes(let read):
                count = read
            case .nothingYet:
                return
            case .failed(let code):
                end("the connection failed: \(String(cString: strerror(code)))")
                return
            }
            // The messages before a bad frame are handled, then the peer hears why it is cut off.
            var messages: [IPCMessage] = []
            var bad: IPCError?
            do throws(IPCError) {
                if count == 0 {
                    try decoder.finish()
                } else {
                    for frame in try decoder.feed(Data(buffer[0..<count])) {
                        messages.append(try IPCMessage(frame: frame))
                    }
                }
            } catch {
                bad = error
            }
            if let refusal = handle(messages) {
                end(refusal)
            } else if let bad {
                failure(CourierError(.unknown, "\(bad)"))
                end("protocol error: \(bad)")
            } else if count == 0 {
                end("the client closed the connection")
            }
        }
    }

    /// Stops reading; ``ended`` follows from the cancel handler.
    private func end(_ reason: String) {
        guard ending == nil else {
            return
        }
        ending = reason
        source?.cancel()
    }
}
