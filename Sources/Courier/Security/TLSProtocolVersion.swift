/// A TLS protocol version, for ``SessionConfiguration/tlsMinimumSupportedProtocolVersion`` and
/// ``SessionConfiguration/tlsMaximumSupportedProtocolVersion`` (Apple's `tls_protocol_version_t`, with its case
/// names).
public enum TLSProtocolVersion: Int, Sendable, Hashable, Comparable, CaseIterable {
    case TLSv10 = 10
    case TLSv11 = 11
    case TLSv12 = 12
    case TLSv13 = 13

    public static func < (lhs: TLSProtocolVersion, rhs: TLSProtocolVersion) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
