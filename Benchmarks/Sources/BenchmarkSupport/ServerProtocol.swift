/// What nginx speaks in a run of the comparison, and so what every client speaks with it.
public enum ServerProtocol: String, Sendable, CaseIterable {
    /// Plain HTTP/1.1.
    case http
    /// HTTPS with HTTP/1.1 only (ALPN offers `http/1.1`): one exchange per connection at a time.
    case https
    /// HTTPS with HTTP/2 (ALPN offers `h2` first): many streams on few connections.
    case h2

    public var isTLS: Bool {
        self != .http
    }

    /// Whether `peer` can run over this protocol. FoundationNetworking's URLSession on Linux has no way to trust a CA
    /// outside the system's store (`URLSessionCertificateAuthorityInfoFile` is read on Android only), and the floor
    /// client takes no CA: both run over plain HTTP only.
    public func supports(_ peer: Peer) -> Bool {
        !isTLS || ![.urlsession, .floor].contains(peer)
    }
}
