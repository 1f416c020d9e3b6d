import CourierConcurrency
public import Foundation
import NIOCore
import NIOPosix

/// A server on 127.0.0.1 that answers each request with scripted raw bytes, for responses NIO's
/// encoder would never produce: garbage, conflicting Content-Length, Content-Length plus chunked,
/// a body longer than announced.
///
/// It reads a request head (up to the blank line), skips a body announced by Content-Length, writes
/// the response bytes as they are, and closes the connection if `closeAfter`, else waits for the next
/// request on it.
public final class RawServer: Sendable {
    /// The port on 127.0.0.1.
    public let port: Int

    /// `http://127.0.0.1:PORT`.
    public let baseURL: URL

    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    private let state: RawServerState
    private let shutDownOnce = OnceFlag()

    private init(port: Int, group: MultiThreadedEventLoopGroup, serverChannel: any Channel, state: RawServerState) {
        self.port = port
        self.baseURL = URL(string: "http://127.0.0.1:\(port)")!
        self.group = group
        self.serverChannel = serverChannel
        self.state = state
    }

    deinit {
        if shutDownOnce.claim() {
            serverChannel.close(promise: nil)
            group.shutdownGracefully { _ in }
        }
    }

    /// Starts a server that answers every request with `response`.
    /// - Parameters:
    ///   - response: the exact bytes written after each request head.
    ///   - closeAfter: close the connection once they are written.
    public static func start(response: Data, closeAfter: Bool = true) async throws -> RawServer {
        try await start(responses: [response], closeAfter: closeAfter)
    }

    /// Starts a server whose n-th request (counted over all connections, from 0) is answered with
    /// `responses[n]`, and every request after the last with the last one.
    public static func start(responses: [Data], closeAfter: Bool = true) async throws -> RawServer {
        precondition(!responses.isEmpty, "RawServer needs at least one response")
        FileDescriptorLimit.raise()
        let state = RawServerState(responses: responses.map { Array($0) })
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        RawResponder(state: state, closeAfter: closeAfter)
                    )
                }
            }
        do {
            let channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
            guard let port = channel.localAddress?.port else {
                throw TestServerError.noLocalAddress
            }
            return RawServer(port: port, group: group, serverChannel: channel, state: state)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// The URL of `pathAndQuery` on this server.
    public func url(_ pathAndQuery: String) -> URL {
        let path = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        return URL(string: baseURL.absoluteString + path)!
    }

    /// The request heads received so far (request line and header lines, without the blank line).
    public var requestHeads: [String] {
        state.requestHeads
    }

    /// TCP connections accepted so far.
    public var connectionCount: Int {
        state.connectionCount
    }

    /// Closes everything and stops the event loop thread. Safe to call more than once.
    public func shutdown() async throws {
        guard shutDownOnce.claim() else { return }
        try? await serverChannel.close()
        try await group.shutdownGracefully()
    }
}

/// The responses and what a ``RawServer`` saw, shared between its connections.
final class RawServerState: Sendable {
    private struct Storage {
        var requestHeads: [String] = []
        var connectionCount = 0
    }

    private let responses: [[UInt8]]
    private let storage = LockedValue(Storage())

    init(responses: [[UInt8]]) {
        self.responses = responses
    }

    var requestHeads: [String] {
        storage.withLock { $0.requestHeads }
    }

    var connectionCount: Int {
        storage.withLock { $0.connectionCount }
    }

    func connectionOpened() {
        storage.withLock { $0.connectionCount += 1 }
    }

    /// Records a head and returns the bytes to answer it with.
    func respond(toHead head: String) -> [UInt8] {
        storage.withLock { storage in
            let index = min(storage.requestHeads.count, responses.count - 1)
            storage.requestHeads.append(head)
            return responses[index]
        }
    }
}
