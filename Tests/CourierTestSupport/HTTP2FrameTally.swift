import NIOCore

/// Counts the RST_STREAM frames an HTTP/2 client sends, read from the connection's bytes before `NIOHTTP2Handler`
/// decodes them (a reset of a stream the server has already closed reaches no stream channel, yet servers count it
/// against the rapid-reset attack). Passes every byte on unchanged.
///
/// One per connection, on its event loop, between TLS and HTTP/2 (`ServerPipeline.configureHTTP2`).
final class HTTP2FrameTally: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let state: ServerState
    /// The client's connection preface ("PRI * HTTP/2.0…", 24 bytes) not yet passed.
    private var prefaceLeft = 24
    /// Bytes of the current frame's payload not yet passed.
    private var payloadLeft = 0
    /// A frame header (9 bytes) split across reads.
    private var header: [UInt8] = []

    init(state: ServerState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        var resets = 0
        while bytes.readableBytes > 0 {
            if prefaceLeft > 0 {
                let skip = min(prefaceLeft, bytes.readableBytes)
                bytes.moveReaderIndex(forwardBy: skip)
                prefaceLeft -= skip
            } else if payloadLeft > 0 {
                let skip = min(payloadLeft, bytes.readableBytes)
                bytes.moveReaderIndex(forwardBy: skip)
                payloadLeft -= skip
            } else {
                let take = min(9 - header.count, bytes.readableBytes)
                header += bytes.readBytes(length: take) ?? []
                if header.count == 9 {
                    payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                    if header[3] == 0x3 {
                        resets += 1
                    }
                    header.removeAll(keepingCapacity: true)
                }
            }
        }
        if resets > 0 {
            state.streamResetsReceived(resets)
        }
        context.fireChannelRead(data)
    }
}
