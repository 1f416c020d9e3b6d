import Courier
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads the one request of a connection to the push endpoint (``PushEndpoint``) as the socket delivers it, on the
/// endpoint's queue, woken by a read source: no thread waits on a client that is slow to send, or sends nothing.
///
/// The request is whole once the head (up to the blank line) and `Content-Length` bytes of body are in. It is not one
/// (`done` gets nil) when the peer closes or fails first, the head is longer than ``maximumHeadLength`` or does not
/// parse (``PushRequestHead``), or ``timeLimit`` passes. `done` is called once, on the queue, once the read source
/// is gone; the descriptor is then the caller's to answer on and close.
///
/// `@unchecked Sendable`: everything but the constants is touched only on `queue`.
final class PushRequestReader: @unchecked Sendable {
    /// One request: its head, and its body of `head.contentLength` bytes.
    struct Request: Sendable {
        var head: PushRequestHead
        var body: Data
    }

    /// The longest request head read.
    static let maximumHeadLength = 16 * 1024
    /// How long a client has to send its whole request.
    static let timeLimit: DispatchTimeInterval = .seconds(10)

    private let descriptor: Int32
    private let queue: DispatchQueue
    private var received = Data()
    /// The head, once parsed, and where the body starts in `received`.
    private var head: (head: PushRequestHead, bodyStart: Int)?
    private var source: (any DispatchSourceRead)?
    private var timer: (any DispatchSourceTimer)?
    private var done: (@Sendable (Request?) -> Void)?

    /// `descriptor`: an accepted connection, made non-blocking here.
    init(descriptor: Int32, queue: DispatchQueue) {
        self.descriptor = descriptor
        self.queue = queue
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    }

    /// Starts reading; `done` is called once, on the queue, with the request or nil. Call once.
    func start(_ done: @escaping @Sendable (Request?) -> Void) {
        queue.async { [self] in
            self.done = done
            let reading = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            reading.setEventHandler { [self] in readAvailable() }
            let deadline = DispatchSource.makeTimerSource(queue: queue)
            deadline.schedule(deadline: .now() + Self.timeLimit)
            deadline.setEventHandler { [self] in finish(nil) }
            source = reading
            timer = deadline
            reading.activate()
            deadline.activate()
        }
    }

    /// Reads what the socket holds without blocking; finishes once the request is whole or cannot be.
    private func readAvailable() {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while done != nil {
            switch UnixSocket.receiveAvailable(from: descriptor, into: &chunk) {
            case .nothingYet:
                return
            case .failed, .bytes(0):
                finish(nil)
                return
            case .bytes(let count):
                received.append(chunk, count: count)
            }
            switch parsed() {
            case .incomplete:
                continue
            case .bad:
                finish(nil)
            case .whole(let request):
                finish(request)
            }
        }
    }

    private enum Parsed {
        case incomplete, bad
        case whole(Request)
    }

    private func parsed() -> Parsed {
        if head == nil {
            guard let end = received.range(of: Data("\r\n\r\n".utf8)) else {
                return received.count > Self.maximumHeadLength ? .bad : .incomplete
            }
            guard end.lowerBound <= Self.maximumHeadLength, let parsed = PushRequestHead(received[..<end.lowerBound])
            else {
                return .bad
            }
            head = (parsed, end.upperBound)
        }
        guard let (head, bodyStart) = head, received.count - bodyStart >= head.contentLength else {
            return .incomplete
        }
        return .whole(Request(head: head, body: Data(received[bodyStart..<(bodyStart + head.contentLength)])))
    }

    /// Once: the timer goes, then the read source; `done` hears the outcome once the source is gone (the descriptor
    /// may then be closed: nothing watches it any more).
    private func finish(_ request: Request?) {
        guard let done, let source else {
            return
        }
        self.done = nil
        self.source = nil
        timer?.cancel()
        timer = nil
        received = Data()
        source.setCancelHandler { done(request) }
        source.cancel()
    }
}
