import NIOCore
import NIOHTTP1
import NIOHTTP2

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
    /// HTTP/2: what the connection has seen of the client's streams (a GOAWAY names the highest).
    private let streams: HTTP2StreamLedger?

    private var sent = 0
    private var timer: Scheduled<Void>?
    private var finished = false

    init(
        context: ChannelHandlerContext,
        plan: ResponsePlan,
        request: HTTPRequestHead,
        streams: HTTP2StreamLedger? = nil,
        onFinished: @escaping (ResponseWriter) -> Void
    ) {
        self.streams = streams
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
        for informational in plan.informational {
            context.write(NIOAny(HTTPServerResponsePart.head(informational)), promise: nil)
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

    /// How writing stops early (ResponsePlan.Faults).
    private enum Stop {
        case close
        case hold
        case tcpReset
        case streamReset(code: UInt32)
        case goAway(code: UInt32)
    }

    /// Where writing stops early: the first of the plan's stops that falls inside the body. A graceful GOAWAY
    /// does not stop the body: it is sent on the way (`goAwayPending`).
    private var abruptStop: (offset: Int, stop: Stop)? {
        let total = plan.body.count
        let faults = plan.faults
        var stops: [(Int, Stop)] = []
        if let cut = faults.cut { stops.append((cut, .close)) }
        if let hold = faults.hold { stops.append((hold, .hold)) }
        if let reset = faults.reset { stops.append((reset, .tcpReset)) }
        if let streamReset = faults.streamReset { stops.append((streamReset.after, .streamReset(code: streamReset.code))) }
        if let goAway = faults.goAway, goAway.code != 0 { stops.append((goAway.after, .goAway(code: goAway.code))) }
        return stops.filter { $0.0 < total }.min { $0.0 < $1.0 }.map { (max(0, $0.0), $0.1) }
    }

    /// A graceful GOAWAY (NO_ERROR) not sent yet: its offset in the body.
    private var goAwayPending: Int? {
        guard let goAway = plan.faults.goAway, goAway.code == 0, !goAwaySent else { return nil }
        return goAway.after
    }
    private var goAwaySent = false

    private func sendBody() {
        guard !finished else { return }
        let stop = abruptStop
        let limit = stop?.offset ?? plan.body.count
        if let goAway = goAwayPending, sent >= min(goAway, limit) {
            goAwaySent = true
            sendGoAway(code: 0)
        }
        if sent >= limit {
            if let stop {
                context.flush()
                switch stop.stop {
                case .close: cutConnection()
                case .hold: break
                case .tcpReset: resetConnection()
                case .streamReset(let code): resetStream(code: code)
                case .goAway(let code): sendGoAway(code: code)
                }
            } else {
                finish()
            }
            return
        }
        let pieceEnd = goAwayPending.map { $0 > sent ? min($0, limit) : limit } ?? limit
        let length = min(plan.faults.trickle?.bytes ?? Self.pieceSize, pieceEnd - sent)
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

    /// HTTP/2: RST_STREAM with `code` on this stream, written below the HTTP/1-style codec. HTTP/1: closes.
    private func resetStream(code: UInt32) {
        markFinished()
        guard isHTTP2, let codec = try? context.pipeline.syncOperations.context(handlerType: HTTP2FramePayloadToHTTP1ServerCodec.self)
        else {
            context.close(promise: nil)
            return
        }
        codec.writeAndFlush(NIOAny(HTTP2Frame.FramePayload.rstStream(HTTP2ErrorCode(networkCode: Int(code)))), promise: nil)
    }

    /// HTTP/2: GOAWAY on the connection, naming the highest stream the server has seen as the last one it acts
    /// on (streams the client opens later are refused). NO_ERROR lets the open streams go on; any other code closes
    /// the connection at once. HTTP/1: closes.
    private func sendGoAway(code: UInt32) {
        guard isHTTP2, let streams else {
            cutConnection()
            return
        }
        let connection = connectionChannel
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(
                lastStreamID: HTTP2StreamID(streams.highestStreamID),
                errorCode: HTTP2ErrorCode(networkCode: Int(code)),
                opaqueData: nil
            )
        )
        if code == 0 {
            connection.writeAndFlush(frame, promise: nil)
            return
        }
        markFinished()
        connection.writeAndFlush(frame).whenComplete { _ in connection.close(promise: nil) }
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
