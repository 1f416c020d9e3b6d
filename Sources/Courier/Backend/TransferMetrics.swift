/// The timings and counts of one transfer (one hop), as the backend measured them.
struct TransferMetrics: Codable, Sendable, Equatable {
    var queuedMicroseconds: Int64 = -1
    var nameLookupMicroseconds: Int64 = -1
    var connectMicroseconds: Int64 = -1
    var tlsMicroseconds: Int64 = -1
    var pretransferMicroseconds: Int64 = -1
    var firstByteMicroseconds: Int64 = -1
    var totalMicroseconds: Int64 = -1
    var requestHeaderBytes: Int64 = 0
    var responseHeaderBytes: Int64 = 0
    var bodyBytesSent: Int64 = 0
    /// Body bytes delivered, after content decoding.
    var bodyBytesReceived: Int64 = 0
    /// Body bytes as they came off the connection, before content decoding; -1 unknown.
    var bodyBytesOnWire: Int64 = 0
    var httpVersion: Int = 0
    var reusedConnection = false
    var remotePort: Int = 0
    var localPort: Int = 0
    var remoteAddress: String = ""
    var localAddress: String = ""
}
