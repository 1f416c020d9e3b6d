import CourierConcurrency
public import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// A real HTTP server for the tests, on SwiftNIO, bound to 127.0.0.1 on a port the kernel picks.
///
/// ```swift
/// let server = try await TestServer.start()                 // HTTP/1.1, plain
/// let tls = try await TestServer.start(.init(tls: true))    // HTTPS, ALPN h2 + http/1.1
/// let url = server.url("/bytes/1024?seed=3")
/// // … run the client against url …
/// try await server.shutdown()
/// ```
///
/// Routes and fault options are listed in docs/test-server.md. Each server owns a two-thread
/// event loop group; ``shutdown()`` stops it and closes every socket. Starting a server also raises
/// the process's soft open-file limit (towards 65,536, never above the hard limit) so that stress
/// tests with thousands of sockets on both ends fit.
public final class TestServer: Sendable {
    /// How the server was started.
    public let configuration: Configuration

    /// The port on 127.0.0.1.
    public let port: Int

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    public let baseURL: URL

    /// With `tls`: the CA to trust (``TestCertificateAuthority/pem``, ``TestCertificateAuthority/pemFile``).
    /// The presented leaf is signed by it unless `untrustedCertificate` was asked for. Nil without `tls`.
    public let certificateAuthority: TestCertificateAuthority?

    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    private let state: ServerState
    private let shutDownOnce = OnceFlag()

    private init(
        configuration: Configuration,
        port: Int,
        certificateAuthority: TestCertificateAuthority?,
        group: MultiThreadedEventLoopGroup,
        serverChannel: any Channel,
        state: ServerState
    ) {
        self.configuration = configuration
        self.port = port
        let scheme = configuration.tls ? "https" : "http"
        if let socket = configuration.unixSocketPath {
            // AsyncHTTPClient's spelling, which Courier reads: the socket's path as the host, percent-encoded.
            let host = socket.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? socket
            self.baseURL = URL(string: "\(scheme)+unix://\(host)")!
        } else {
            self.baseURL = URL(string: "\(scheme)://\(configuration.host):\(port)")!
        }
        self.certificateAuthority = certificateAuthority
        self.group = group
        self.serverChannel = serverChannel
        self.state = state
    }

    deinit {
        // A test that forgot shutdown() must not leave threads behind.
        if shutDownOnce.claim() {
            serverChannel.close(promise: nil)
            group.shutdownGracefully { _ in }
            removeAuthorityFiles()
        }
    }

    /// Starts a server.
    /// - Parameter configuration: plain or TLS, HTTP/2 or not, which certificate.
    /// - Returns: the running server; call ``shutdown()`` when done.
    public static func start(_ configuration: Configuration = Configuration()) async throws -> TestServer {
        FileDescriptorLimit.raise()
        var authority: TestCertificateAuthority?
        var sslContext: NIOSSLContext?
        if configuration.tls {
            let (made, context) = try makeTLS(configuration)
            authority = made
            sslContext = context
        }

        let state = ServerState(proxyCredential: configuration.proxyCredential)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let http2 = configuration.http2
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.maxMessagesPerRead, value: 64)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { [sslContext] channel in
                ServerPipeline.initialize(channel: channel, state: state, sslContext: sslContext, http2: http2)
            }
        do {
            let channel: any Channel
            let port: Int
            if let socket = configuration.unixSocketPath {
                channel = try await bootstrap.bind(unixDomainSocketPath: socket, cleanupExistingSocketFile: true).get()
                port = 0
            } else {
                channel = try await bootstrap.bind(host: configuration.host, port: 0).get()
                guard let bound = channel.localAddress?.port else {
                    throw TestServerError.noLocalAddress
                }
                port = bound
            }
            return TestServer(
                configuration: configuration,
                port: port,
                certificateAuthority: authority,
                group: group,
                serverChannel: channel,
                state: state
            )
        } catch {
            try? await group.shutdownGracefully()
            if !configuration.sharedAuthority {
                authority?.removeFiles()
            }
            throw error
        }
    }

    /// Deletes the files of the CA this server made (none of the shared one).
    private func removeAuthorityFiles() {
        if !configuration.sharedAuthority {
            certificateAuthority?.removeFiles()
        }
    }

    /// Builds the CA, picks the leaf the configuration asks for, and makes the TLS context.
    private static func makeTLS(_ configuration: Configuration) throws -> (TestCertificateAuthority, NIOSSLContext) {
        let authority = configuration.sharedAuthority ? try TestCertificateAuthority.shared() : try TestCertificateAuthority.make()
        let leaf: TestCertificateAuthority.Leaf
        if configuration.untrustedCertificate {
            let stranger = try TestCertificateAuthority.make()
            stranger.removeFiles()
            leaf = stranger.leaf
        } else if configuration.wrongHostName {
            leaf = try authority.makeLeaf(dnsNames: ["wrong-host.invalid"])
        } else if configuration.expiredCertificate {
            let now = Date()
            leaf = try authority.makeLeaf(
                dnsNames: ["localhost"],
                ipAddresses: ["127.0.0.1", "::1"],
                notValidBefore: now.addingTimeInterval(-10 * 24 * 3600),
                notValidAfter: now.addingTimeInterval(-24 * 3600)
            )
        } else {
            leaf = authority.leaf
        }
        do {
            let certificate = try NIOSSLCertificate(bytes: Array(leaf.certificatePEM), format: .pem)
            let key = try NIOSSLPrivateKey(bytes: Array(leaf.privateKeyPEM), format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(certificate)],
                privateKey: .privateKey(key)
            )
            tls.applicationProtocols = configuration.http2 ? ["h2", "http/1.1"] : ["http/1.1"]
            if configuration.requiresClientCertificate {
                tls.certificateVerification = .noHostnameVerification
                tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(authority.pem), format: .pem)])
            }
            if configuration.tls12Only {
                tls.maximumTLSVersion = .tlsv12
            }
            return (authority, try NIOSSLContext(configuration: tls))
        } catch {
            if !configuration.sharedAuthority {
                authority.removeFiles()
            }
            throw error
        }
    }

    /// A client certificate and key (PEM) signed by this server's CA, which a server that
    /// ``Configuration/requiresClientCertificate`` accepts.
    public func makeClientIdentity() throws -> (certificatePEM: Data, privateKeyPEM: Data) {
        guard let authority = certificateAuthority else {
            throw TestServerError.noLocalAddress
        }
        let leaf = try authority.makeLeaf(dnsNames: ["courier-test-client"])
        return (leaf.certificatePEM, leaf.privateKeyPEM)
    }

    /// The URL of `pathAndQuery` (e.g. `"/bytes/1024?seed=3"`) on this server.
    public func url(_ pathAndQuery: String) -> URL {
        let path = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        return URL(string: baseURL.absoluteString + path)!
    }

    /// Every request received completely so far, in arrival order.
    public var requests: [RecordedRequest] {
        state.requests
    }

    /// Forgets the recorded requests.
    public func removeAllRequests() {
        state.removeAllRequests()
    }

    /// TCP connections accepted so far.
    public var connectionCount: Int {
        state.acceptedConnections
    }

    /// HTTP/2: the RST_STREAM frames clients sent so far (resets of streams the server had already closed
    /// included, which SwiftNIO counts against the rapid-reset attack: 200 in 30 s end the connection).
    public var streamResetCount: Int {
        state.streamResets
    }

    /// TCP connections open right now.
    public var openConnectionCount: Int {
        state.openConnections
    }

    /// The most TCP connections that were open at the same time so far.
    public var peakOpenConnectionCount: Int {
        state.peakOpenConnections
    }

    /// Closes the listening socket and every connection, stops the event loop threads and deletes the
    /// CA file. Safe to call more than once.
    public func shutdown() async throws {
        guard shutDownOnce.claim() else { return }
        try? await serverChannel.close()
        try await group.shutdownGracefully()
        removeAuthorityFiles()
    }
}

/// Errors from ``TestServer`` and ``RawServer``.
public enum TestServerError: Error, Sendable {
    /// The listening socket has no local address.
    case noLocalAddress
}
