import NIOCore
import NIOHTTP1
import NIOWebSocket

/// WebSocket routes (RFC 6455), over the HTTP/1.1 pipeline (docs/test-server.md): an upgrade of any `GET /ws…`
/// except `/ws/refuse` (which stays an ordinary 404), with the subprotocol `chat` or `superchat` when the client
/// offers one, and what the target's query asks for once open.
enum WebSocketRoute {
    static let subprotocols = ["chat", "superchat"]

    static func upgrader(state: ServerState) -> NIOWebSocketServerUpgrader {
        NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 24,
            automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                let path = ReceivedRequest.splitTarget(ReceivedRequest.originForm(head.uri)).path
                guard path.hasPrefix("/ws"), path != "/ws/refuse" else {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                var headers = HTTPHeaders()
                let offered = head.headers[canonicalForm: "sec-websocket-protocol"].map(String.init)
                let query = Query(head.uri)
                if let forced = query.value("protocol") {
                    headers.add(name: "Sec-WebSocket-Protocol", value: forced)
                } else if let chosen = offered.first(where: { subprotocols.contains($0) }) {
                    headers.add(name: "Sec-WebSocket-Protocol", value: chosen)
                }
                return channel.eventLoop.makeSucceededFuture(headers)
            },
            upgradePipelineHandler: { channel, head in
                state.record(
                    RecordedRequest(
                        method: head.method.rawValue,
                        uri: head.uri,
                        headers: head.headers.map { ($0.name, $0.value) },
                        bodyLength: 0,
                        httpVersion: "\(head.version.major).\(head.version.minor)"
                    )
                )
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(WebSocketServerHandler(query: Query(head.uri)))
                }
            }
        )
    }

    /// The target's query options.
    struct Query: Sendable {
        private let pairs: [(String, String)]

        init(_ uri: String) {
            let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            pairs = query.split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? (parts[1].removingPercentEncoding ?? parts[1]) : "")
            }
        }

        func value(_ name: String) -> String? {
            pairs.first { $0.0 == name }?.1
        }
    }
}

/// One upgraded connection. By default it echoes every data frame as it came (fragmentation kept), answers a Ping
/// with a Pong of its payload and a Close with the same code, then closes. Every client frame must be masked, else it
/// closes with 1002. Query options (acted out once open): `fragments=N` (echo each single-frame message as N
/// fragments), `close=CODE` (send a Close with CODE and the reason "bye", then wait for the client's), `drop` (close
/// the TCP connection with no Close), `ping` (send a Ping "hello?", and when its Pong comes, a text "pong:PAYLOAD"),
/// `bad=masked|rsv|utf8|control` (send a frame a server must not: masked, with RSV1, a text that is not UTF-8, a
/// fragmented Ping), `flood=N&size=S` (send N binary messages of S bytes each, byte i of message m being (m + i) &
/// 255, then a text "done").
final class WebSocketServerHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let query: WebSocketRoute.Query

    init(query: WebSocketRoute.Query) {
        self.query = query
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let allocator = context.channel.allocator
        func text(_ string: String) -> ByteBuffer {
            allocator.buffer(string: string)
        }
        if let code = query.value("close").flatMap(UInt16.init) {
            var payload = allocator.buffer(capacity: 5)
            payload.writeInteger(code)
            payload.writeString("bye")
            write(context, WebSocketFrame(fin: true, opcode: .connectionClose, data: payload))
        } else if query.value("drop") != nil {
            context.close(promise: nil)
        } else if query.value("ping") != nil {
            write(context, WebSocketFrame(fin: true, opcode: .ping, data: text("hello?")))
        } else if let bad = query.value("bad") {
            switch bad {
            case "masked":
                write(context, WebSocketFrame(fin: true, opcode: .text, maskKey: [1, 2, 3, 4], data: text("masked")))
            case "rsv":
                write(context, WebSocketFrame(fin: true, rsv1: true, opcode: .text, data: text("rsv")))
            case "utf8":
                var payload = allocator.buffer(capacity: 4)
                payload.writeBytes([0x68, 0xC3, 0x28, 0x69])
                write(context, WebSocketFrame(fin: true, opcode: .text, data: payload))
            default:
                write(context, WebSocketFrame(fin: false, opcode: .ping, data: text("half")))
            }
        } else if let count = query.value("flood").flatMap(Int.init) {
            let size = query.value("size").flatMap(Int.init) ?? 1024
            // Two periods of the byte pattern, so that any message's bytes are runs of one slice of it.
            let period = (0 ..< 512).map { UInt8(truncatingIfNeeded: $0) }
            for message in 0 ..< count {
                var payload = allocator.buffer(capacity: size)
                let start = message & 255
                while payload.readableBytes < size {
                    let run = min(256, size - payload.readableBytes)
                    payload.writeBytes(period[start ..< start + run])
                }
                context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: payload)), promise: nil)
            }
            write(context, WebSocketFrame(fin: true, opcode: .text, data: text("done")))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil else {
            close(context, code: 1002)
            return
        }
        switch frame.opcode {
        case .connectionClose:
            // Answer with the client's code (or none), unless this side began the close.
            if query.value("close") == nil {
                var payload = frame.unmaskedData
                let code = payload.readInteger(as: UInt16.self)
                var answer = context.channel.allocator.buffer(capacity: 2)
                if let code {
                    answer.writeInteger(code)
                }
                write(context, WebSocketFrame(fin: true, opcode: .connectionClose, data: answer))
            }
            context.close(promise: nil)
        case .ping:
            write(context, WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData))
        case .pong:
            var payload = frame.unmaskedData
            let text = payload.readString(length: payload.readableBytes) ?? ""
            let answer = context.channel.allocator.buffer(string: "pong:\(text)")
            write(context, WebSocketFrame(fin: true, opcode: .text, data: answer))
        case .text, .binary, .continuation:
            let fragments = query.value("fragments").flatMap(Int.init) ?? 1
            guard fragments > 1, frame.fin, frame.opcode != .continuation else {
                write(context, WebSocketFrame(fin: frame.fin, opcode: frame.opcode, data: frame.unmaskedData))
                return
            }
            var payload = frame.unmaskedData
            let piece = max(1, (payload.readableBytes + fragments - 1) / fragments)
            var first = true
            repeat {
                let slice = payload.readSlice(length: min(piece, payload.readableBytes))!
                let opcode: WebSocketOpcode = first ? frame.opcode : .continuation
                first = false
                context.write(
                    wrapOutboundOut(WebSocketFrame(fin: payload.readableBytes == 0, opcode: opcode, data: slice)),
                    promise: nil
                )
            } while payload.readableBytes > 0
            context.flush()
        default:
            close(context, code: 1002)
        }
    }

    private func write(_ context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    private func close(_ context: ChannelHandlerContext, code: UInt16) {
        var payload = context.channel.allocator.buffer(capacity: 2)
        payload.writeInteger(code)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)))
            .whenComplete { _ in channel.close(promise: nil) }
    }
}
