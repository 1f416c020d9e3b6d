import Foundation

extension TestServer {
    /// How a ``TestServer`` listens: plain HTTP/1.1, or TLS with ALPN, and which certificate it presents.
    ///
    /// The server binds to 127.0.0.1 (or ``host``) on a port chosen by the kernel.
    public struct Configuration: Sendable, Hashable {
        /// The address to listen on: 127.0.0.1, or an address of a link the test made itself (a veth pair into a
        /// network namespace).
        public var host = "127.0.0.1"

        /// Requests in absolute form (`GET http://host:port/path`, as sent to a proxy) are served as the path, so
        /// the server is its own forward proxy; with this `user:password`, one without that `Proxy-Authorization`
        /// (Basic) gets 407 and `Proxy-Authenticate: Basic realm="proxy"`.
        public var proxyCredential: String?

        /// Serve HTTPS with a leaf certificate signed by a test CA made at start time.
        public var tls: Bool

        /// With `tls`, offer `h2` before `http/1.1` in ALPN. `false` offers only `http/1.1`.
        /// Ignored without `tls` (there is no cleartext HTTP/2).
        public var http2: Bool

        /// With `tls`, present a leaf signed by a second CA that is *not* the one in
        /// ``TestServer/certificateAuthority``, so certificate verification must fail.
        public var untrustedCertificate: Bool

        /// With `tls`, present a leaf signed by the trusted CA but valid only for the DNS name
        /// `wrong-host.invalid` (no IP address), so host name verification must fail.
        public var wrongHostName: Bool

        /// With `tls`, present a leaf signed by the trusted CA whose validity ended yesterday.
        public var expiredCertificate: Bool

        /// With `tls`, ask every client for a certificate and refuse one that the server's CA did not sign, or none
        /// (mutual TLS): ``TestServer/makeClientIdentity()`` makes one that passes.
        public var requiresClientCertificate = false

        /// With `tls`, speak TLS 1.2 at most (a server a client that asks for TLS 1.3 cannot talk to).
        public var tls12Only = false

        /// Listen on this Unix-domain socket instead of TCP (``TestServer/port`` is then 0).
        public var unixSocketPath: String?

        /// Plain HTTP/1.1 in every pass of the tests: ``forCurrentProtocol()`` leaves it as it is (a server a test
        /// needs plain, e.g. the target of a downgrade, or a forward proxy for `http` URLs).
        public var plainInEveryPass = false

        /// With `tls`, sign the leaf with ``TestCertificateAuthority/shared`` (made once per process) instead of a
        /// CA of the server's own, so that a session can trust the server before it starts.
        public var sharedAuthority = false

        /// Creates a configuration.
        /// - Parameters:
        ///   - tls: serve HTTPS instead of plain HTTP.
        ///   - http2: with `tls`, also offer HTTP/2 through ALPN.
        ///   - untrustedCertificate: with `tls`, present a leaf signed by an unknown CA.
        ///   - wrongHostName: with `tls`, present a leaf for another host name.
        ///   - expiredCertificate: with `tls`, present an expired leaf.
        public init(
            tls: Bool = false,
            http2: Bool = true,
            untrustedCertificate: Bool = false,
            wrongHostName: Bool = false,
            expiredCertificate: Bool = false
        ) {
            self.tls = tls
            self.http2 = http2
            self.untrustedCertificate = untrustedCertificate
            self.wrongHostName = wrongHostName
            self.expiredCertificate = expiredCertificate
        }

        /// This configuration for the protocol pass the tests run in (``TestProtocol/current``): under
        /// `COURIER_TEST_PROTOCOL=h2`, a plain loopback server becomes an HTTPS one that offers HTTP/2, signed by the
        /// shared CA; a forward proxy (``proxyCredential``) and ``plainInEveryPass`` stay plain. Everything else is
        /// left as asked.
        public func forCurrentProtocol() -> Configuration {
            guard TestProtocol.current == .http2, !tls, !plainInEveryPass, proxyCredential == nil, host == "127.0.0.1",
                unixSocketPath == nil
            else { return self }
            var configuration = self
            configuration.tls = true
            configuration.http2 = true
            configuration.sharedAuthority = true
            return configuration
        }
    }
}

/// The protocol the session tests speak with their servers. The test command runs them once over plain HTTP/1.1
/// and once more with `COURIER_TEST_PROTOCOL=h2`: every server a test starts through
/// ``TestServer/Configuration/forCurrentProtocol()`` then serves HTTPS with HTTP/2 (ALPN), and every test session
/// trusts ``TestCertificateAuthority/shared``.
public enum TestProtocol: Sendable {
    case http1
    case http2

    /// From `COURIER_TEST_PROTOCOL` (`h2`; anything else is HTTP/1.1).
    public static let current: TestProtocol =
        ProcessInfo.processInfo.environment["COURIER_TEST_PROTOCOL"] == "h2" ? .http2 : .http1
}
