import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import NIOWebSocket

/// Builds the pipeline of each accepted connection:
/// `ConnectionTap` → [`NIOSSLServerHandler` → ALPN] → HTTP/1 codec or HTTP/2 → `HTTPRequestHandler`.
enum ServerPipeline {
    /// HTTP/2 settings: more concurrent streams than NIO's default 100, for the stress tests.
    static let http2Settings: HTTP2Settings = [
        HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
        HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
    ]

    /// Runs on the connection's event loop (ServerBootstrap calls child initializers there).
    static func initialize(
        channel: any Channel,
        state: ServerState,
        sslContext: NIOSSLContext?,
        http2: Bool
    ) -> EventLoopFuture<Void> {
        do {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(ConnectionTap(state: state), name: ConnectionTap.name)
            guard let sslContext else {
                try configureHTTP1(channel, state: state)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
            guard http2 else {
                try configureHTTP1(channel, state: state)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            return channel.configureHTTP2SecureUpgrade(
                h2ChannelConfigurator: { channel in
                    channel.eventLoop.makeCompletedFuture { try configureHTTP2(channel, state: state) }
                },
                http1ChannelConfigurator: { channel in
                    channel.eventLoop.makeCompletedFuture { try configureHTTP1(channel, state: state) }
                }
            )
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// HTTP/1.1 with NIO's pipelining assistance, 400 answers to unparsable requests, and WebSocket upgrades under
    /// `/ws` (``WebSocketRoute``).
    static func configureHTTP1(_ channel: any Channel, state: ServerState) throws {
        let pipeline = channel.pipeline.syncOperations
        let requests = "courier-test-requests"
        try pipeline.configureHTTPServerPipeline(
            withPipeliningAssistance: true,
            withServerUpgrade: (
                upgraders: [WebSocketRoute.upgrader(state: state)],
                // Upgraded: the frames go to the WebSocket handler, not to the HTTP one.
                completionHandler: { context in
                    context.pipeline.syncOperations.removeHandler(name: requests, promise: nil)
                }
            ),
            withErrorHandling: true
        )
        try pipeline.addHandler(HTTPRequestHandler(state: state), name: requests)
    }

    /// HTTP/2: one child channel per stream, each translated to HTTP/1-style parts for the same handler.
    /// Content-Length validation is off so that `lie=` really sends a wrong Content-Length.
    static func configureHTTP2(_ channel: any Channel, state: ServerState) throws {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = http2Settings
        connection.contentLengthValidation = .disabled
        connection.targetWindowSize = 8 << 20
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.targetWindowSize = 1 << 20
        let streams = HTTP2StreamLedger()
        try channel.pipeline.syncOperations.addHandler(HTTP2FrameTally(state: state))
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server,
            connectionConfiguration: connection,
            streamConfiguration: stream
        ) { streamChannel in
            streamChannel.eventLoop.makeCompletedFuture {
                let pipeline = streamChannel.pipeline.syncOperations
                try pipeline.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                try pipeline.addHandler(HTTPRequestHandler(state: state, streams: streams))
            }
        }
    }
}
