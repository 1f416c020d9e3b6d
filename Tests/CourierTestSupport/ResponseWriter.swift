import NIOCore
import NIOHTTP1

/// Writes one ``ResponsePlan`` on one channel and acts out its faults with event-loop timers.
///
/// Lives on the channel's event loop only: every callback is scheduled through the loop's isolated API.
/// The body is produced and written one piece at a time (the next piece after the previous one has
/// been written), so large bodies never sit in memory and a slow reader slows the writer.
final class ResponseWriter {
    /// The largest body piece written at once when not trickling.
    static let pieceSize = 64 * 1024

    private let context: ChannelHandlerContext
    private let plan: ResponsePlan
    private let version: HTTPVersion
    private let isHEAD: Bool
    private let isHTTP2: Bool
    private let keepAlive: Bool
    private let onFinished: (ResponseWriter) -> Void

    private var sent = 0
    private var timer: Scheduled<Void>?
    private var finished = false

    init(
        context: ChannelHandlerContext,
        plan: ResponsePlan,
        request: HTTPRequestHead,
        onFinished: @escaping (ResponseWriter) -> Void
    ) {
        self.context = context
        self.plan = plan
        self.version = request.version
        self.isHEAD = request.method == .HEAD
        self.isHTTP2 = request.version.major == 2
        self.keepAlive = request.version.major == 2 || request.isKeepAlive
        self.onFinished = onFinished
    }

    /// Starts writing (after `delay`, if any).
    func start() {
        if let delay = plan.faults.delay {
            schedule(after: delay) { $0.sendHead() }
        } else {
            sendHead()
        }
    }

    /// Stops for good: the channel went away.
    func cancel() {
        timer?.cancel()
        timer = nil
        markFinished()
    }

    // MARK: - Steps

    private func sendHead() {
        guard !finished else { return }
        if case .garbage(let bytes) = plan.special {
            sendGarbage(bytes)
            return
        }
        var headers = plan.headers
        let mayHaveBody = Self.mayHaveBody(plan.status)
        if mayHaveBody {
            if plan.faults.chunked && !isHEAD {
                headers.remove(name: "Content-Length")
            } else {
                let announced = plan.faults.lie.map { max(0, plan.body.count + $0) } ?? plan.body.count
                headers.replaceOrAdd(name: "Content-Length", value: String(announced))
            }
        }
        if !keepAlive && !isHTTP2 {
            headers.replaceOrAdd(name: "Connection", value: "close")
        }
        let head = HTTPResponseHead(version: version, status: plan.status, headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)

        if isHEAD || !mayHaveBody || plan.body.count == 0 {
            finish()
        } else if let stall = plan.faults.stall {
            context.flush()
            schedule(after: stall) { $0.sendBody() }
        } else {
            sendBody()
        }
    }

    /// Where writing stops early: the first of `cut` and `reset` that falls inside the body.
    private var abruptStop: (offset: Int, isReset: Bool)? {
        let total = plan.body.count
        let cut = plan.faults.cut.flatMap { $0 < total ? max(0, $0) : nil }
        let reset = plan.faults.reset.flatMap { $0 < total ? max(0, $0) : nil }
        switch (cut, reset) {
        case (nil, nil): return nil
        case (let cut?, nil): return (cut, false)
        case (nil, let reset?): return (reset, true)
        case (let cut?, let reset?): return reset <= cut ? (reset, true) : (cut, false)
        }
    }

    private func sendBody() {
        guard !finished else { return }
        let stop = abruptStop
        let limit = stop?.offset ?? plan.body.count
        if sent >= limit {
            if let stop {
                context.flush()
                if stop.isReset { resetConnection() } else { cutConnection() }
            } else {
                finish()
            }
            return
        }
        let length = min(plan.faults.trickle?.bytes ?? Self.pieceSize, limit - sent)
        let piece = plan.body.slice(from: sent, length: length, allocator: context.channel.allocator)
        sent += length
        let part = NIOAny(HTTPServerResponsePart.body(.byteBuffer(piece)))

        if sent >= limit && stop == nil {
            // The last piece of an ordinary response: send it together with the end.
            context.write(part, promise: nil)
            finish()
            return
        }
        context.writeAndFlush(part).assumeIsolated().whenComplete { result in
            switch result {
            case .failure:
                self.abandon()
            case .success:
                if let trickle = self.plan.faults.trickle, self.sent < limit {
                    self.schedule(after: trickle.interval) { $0.sendBody() }
                } else {
                    // Through the loop rather than recursively, so a huge body does not grow the stack.
                    self.context.eventLoop.assumeIsolated().execute { self.sendBody() }
                }
            }
        }
    }

    /// Ends the response normally, then closes or resets if the plan says so.
    private func finish() {
        guard !finished else { return }
        markFinished()
        let total = plan.body.count
        let resetAfter = plan.faults.reset.map { $0 >= total } ?? false
        let closeAfter = !keepAlive || plan.faults.lie != nil || (plan.faults.cut.map { $0 >= total } ?? false)
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).assumeIsolated().whenComplete { result in
            if case .failure = result {
                self.context.close(promise: nil)
            } else if resetAfter {
                ConnectionTap.abortConnection(self.connectionChannel)
            } else if closeAfter && !self.isHTTP2 {
                self.context.close(promise: nil)
            }
        }
    }

    /// HTTP/1: closes the connection (TLS sends close_notify first). HTTP/2: resets the stream.
    private func cutConnection() {
        markFinished()
        context.close(promise: nil)
    }

    /// Aborts the TCP connection with an RST (SO_LINGER 0), HTTP/2 included: every stream on it dies.
    private func resetConnection() {
        markFinished()
        ConnectionTap.abortConnection(connectionChannel)
    }

    /// Writes bytes that are not HTTP straight to the connection, below the HTTP/1 encoder, then closes.
    /// On HTTP/2 the stream is reset instead.
    private func sendGarbage(_ bytes: ByteBuffer) {
        markFinished()
        guard !isHTTP2,
            let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        else {
            context.close(promise: nil)
            return
        }
        encoder.writeAndFlush(NIOAny(bytes)).assumeIsolated().whenComplete { _ in
            self.context.close(promise: nil)
        }
    }

    private func abandon() {
        timer?.cancel()
        timer = nil
        markFinished()
        context.close(promise: nil)
    }

    // MARK: - Helpers

    /// The TCP connection: the stream channel's parent on HTTP/2, the channel itself on HTTP/1
    /// (whose parent is the listening socket).
    private var connectionChannel: any Channel {
        isHTTP2 ? (context.channel.parent ?? context.channel) : context.channel
    }

    private func markFinished() {
        guard !finished else { return }
        finished = true
        onFinished(self)
    }

    private func schedule(after amount: TimeAmount, _ body: @escaping (ResponseWriter) -> Void) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: amount) {
            self.timer = nil
            body(self)
        }
    }

    /// 1xx, 204 and 304 responses never carry a body or a Content-Length.
    static func mayHaveBody(_ status: HTTPResponseStatus) -> Bool {
        !(status.code < 200 || status.code == 204 || status.code == 304)
    }
}
