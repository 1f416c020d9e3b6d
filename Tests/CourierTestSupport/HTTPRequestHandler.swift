import Crypto
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Serves HTTP/1-style request parts, from the HTTP/1 decoder or, per stream, from
/// `HTTP2FramePayloadToHTTP1ServerCodec`: collects each request, records it, routes it, and hands the
/// answer to a ``ResponseWriter``.
final class HTTPRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: ServerState
    /// HTTP/2: the streams of this handler's connection; nil on HTTP/1.
    private let streams: HTTP2StreamLedger?
    private var head: HTTPRequestHead?
    private var bodyMode = Router.BodyMode.count
    private var body = ByteBuffer()
    private var bodyLength = 0
    private var hasher = SHA256()
    private var writer: ResponseWriter?
    /// The resumable upload this request starts or appends to (`/resumable`).
    private var resumable: ResumableUploads.Role?

    init(state: ServerState, streams: HTTP2StreamLedger? = nil) {
        self.state = state
        self.streams = streams
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            if let streams, let id = try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) {
                streams.noteStream(Int(Int32(id)))
            }
            bodyMode = Router.bodyMode(for: head)
            body = context.channel.allocator.buffer(capacity: 0)
            bodyLength = 0
            hasher = SHA256()
            if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                let interim = HTTPResponseHead(version: head.version, status: .continue)
                context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
            }
            resumable = state.resumableUploads.begin(head)
            if case .start(let id) = resumable {
                context.writeAndFlush(wrapOutboundOut(.head(ResumableUploads.offer(id, version: head.version))), promise: nil)
            }
        case .body(var buffer):
            switch resumable {
            case .start(let id), .append(let id, true):
                guard state.resumableUploads.append(buffer, to: id) else {
                    // The upload's cut: nothing more is kept, and a moment later (the client has read the 104 by
                    // then) the connection goes (RST, below the HTTP handlers, which would hold a close until the
                    // response ends), as a network failure would take it.
                    let connection = head?.version.major == 2 ? (context.channel.parent ?? context.channel) : context.channel
                    head = nil
                    resumable = nil
                    context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(100)) {
                        ConnectionTap.abortConnection(connection)
                    }
                    return
                }
            default:
                break
            }
            bodyLength += buffer.readableBytes
            switch bodyMode {
            case .count:
                break
            case .keep:
                body.writeBuffer(&buffer)
            case .hash:
                buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let request = ReceivedRequest(
                head: head,
                body: body,
                bodyLength: bodyLength,
                bodySHA256: bodyMode == .hash ? Hex.encode(hasher.finalize()) : nil
            )
            body = context.channel.allocator.buffer(capacity: 0)
            state.record(request.recorded)
            let plan =
                request.pathSegments.first == "resumable"
                ? state.resumableUploads.respond(to: request, role: resumable) : Router.respond(to: request, state: state)
            resumable = nil
            let writer = ResponseWriter(context: context, plan: plan, request: head, streams: streams) { [weak self] finished in
                if self?.writer === finished {
                    self?.writer = nil
                }
            }
            self.writer = writer
            writer.start()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        writer?.cancel()
        writer = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
