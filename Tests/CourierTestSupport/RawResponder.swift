import NIOCore

/// The per-connection handler of ``RawServer``: finds each request head, skips its body, writes the
/// scripted bytes unchanged.
final class RawResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Heads longer than this close the connection.
    static let maximumHeadLength = 64 * 1024

    private let state: RawServerState
    private let closeAfter: Bool
    private var buffered: [UInt8] = []
    private var bodyBytesToSkip = 0
    private var closing = false

    init(state: RawServerState, closeAfter: Bool) {
        self.state = state
        self.closeAfter = closeAfter
    }

    func channelActive(context: ChannelHandlerContext) {
        state.connectionOpened()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        buffered += buffer.readBytes(length: buffer.readableBytes) ?? []
        process(context: context)
    }

    private func process(context: ChannelHandlerContext) {
        while !closing {
            if bodyBytesToSkip > 0 {
                let skipped = min(bodyBytesToSkip, buffered.count)
                buffered.removeFirst(skipped)
                bodyBytesToSkip -= skipped
                if bodyBytesToSkip > 0 { return }
            }
            guard let end = Self.headEnd(in: buffered) else {
                if buffered.count > Self.maximumHeadLength {
                    context.close(promise: nil)
                }
                return
            }
            let head = String(decoding: buffered[..<end], as: UTF8.self)
            buffered.removeFirst(end + 4)
            bodyBytesToSkip = Self.contentLength(of: head)
            let response = state.respond(toHead: head)
            let write = context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: response)))
            if closeAfter {
                closing = true
                write.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The index of the `\r\n\r\n` ending the first head in `bytes`.
    static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// The Content-Length of a request head, 0 when absent.
    static func contentLength(of head: String) -> Int {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == "content-length" {
                return Int(line[line.index(after: colon)...].trimmed(of: " \t")) ?? 0
            }
        }
        return 0
    }
}
