/// The timings and counts of one transfer (one hop), as the backend measured them.
package struct TransferMetrics: Codable, Sendable, Equatable {
    package var queuedMicroseconds: Int64 = -1
    package var nameLookupMicroseconds: Int64 = -1
    package var connectMicroseconds: Int64 = -1
    package var tlsMicroseconds: Int64 = -1
    package var pretransferMicroseconds: Int64 = -1
    package var firstByteMicroseconds: Int64 = -1
    package var totalMicroseconds: Int64 = -1
    package var requestHeaderBytes: Int64 = 0
    package var responseHeaderBytes: Int64 = 0
    package var bodyBytesSent: Int64 = 0
    /// Body bytes delivered, after content decoding.
    package var bodyBytesReceived: Int64 = 0
    /// Body bytes as they came off the connection, before content decoding; -1 unknown.
    package var bodyBytesOnWire: Int64 = 0
    package var httpVersion: Int = 0
    package var reusedConnection = false
    package var remotePort: Int = 0
    package var localPort: Int = 0
    package var remoteAddress: String = ""
    package var localAddress: String = ""

    /// Nothing measured: every time -1, every count 0.
    package init() {}
}
