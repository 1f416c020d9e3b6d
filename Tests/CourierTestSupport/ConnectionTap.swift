import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The first handler of every accepted connection: counts it, and gives the writers a way to abort it
/// below TLS and HTTP/2.
final class ConnectionTap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// The handler's name in the pipeline.
    static let name = "courier.connection-tap"

    private let state: ServerState
    private var counted = false

    init(state: ServerState) {
        self.state = state
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            open()
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        open()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted {
            counted = false
            state.connectionClosed()
        }
        context.fireChannelInactive()
    }

    private func open() {
        guard !counted else { return }
        counted = true
        state.connectionOpened()
    }

    /// Sends a TCP RST: SO_LINGER {on, 0}, then a close issued from this handler, so it goes straight to
    /// the socket without a TLS close_notify or an HTTP/2 GOAWAY. Must run on the channel's event loop.
    static func abortConnection(_ channel: any Channel) {
        guard let provider = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in
            if let tap = try? channel.pipeline.syncOperations.context(name: ConnectionTap.name) {
                tap.close(promise: nil)
            } else {
                channel.close(promise: nil)
            }
        }
    }
}
