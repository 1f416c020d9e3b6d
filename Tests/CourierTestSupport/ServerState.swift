import CourierConcurrency

/// What a running server shares between its event loops and the test: recorded requests,
/// connection counters and the Digest nonces it has issued. All access goes through one lock.
final class ServerState: Sendable {
    /// As a forward proxy (requests in absolute form): the `user:password` its `Proxy-Authorization` must carry, or
    /// nil when it asks for none.
    let proxyCredential: String?

    /// The uploads of `/resumable` (``ResumableUploads``).
    let resumableUploads = ResumableUploads()

    init(proxyCredential: String? = nil) {
        self.proxyCredential = proxyCredential
    }

    private struct Storage {
        var requests: [RecordedRequest] = []
        var acceptedConnections = 0
        var openConnections = 0
        var peakOpenConnections = 0
        var issuedNonces: Set<String> = []
        var streamResets = 0
    }

    private let storage = LockedValue(Storage())

    var requests: [RecordedRequest] {
        storage.withLock { $0.requests }
    }

    var acceptedConnections: Int {
        storage.withLock { $0.acceptedConnections }
    }

    var openConnections: Int {
        storage.withLock { $0.openConnections }
    }

    var peakOpenConnections: Int {
        storage.withLock { $0.peakOpenConnections }
    }

    /// RST_STREAM frames HTTP/2 clients sent (``HTTP2FrameTally``).
    var streamResets: Int {
        storage.withLock { $0.streamResets }
    }

    func streamResetsReceived(_ count: Int) {
        storage.withLock { $0.streamResets += count }
    }

    func record(_ request: RecordedRequest) {
        storage.withLock { $0.requests.append(request) }
    }

    func removeAllRequests() {
        storage.withLock { $0.requests.removeAll() }
    }

    func connectionOpened() {
        storage.withLock {
            $0.acceptedConnections += 1
            $0.openConnections += 1
            $0.peakOpenConnections = max($0.peakOpenConnections, $0.openConnections)
        }
    }

    func connectionClosed() {
        storage.withLock { $0.openConnections -= 1 }
    }

    func issueNonce(_ nonce: String) {
        storage.withLock { _ = $0.issuedNonces.insert(nonce) }
    }

    func isIssuedNonce(_ nonce: String) -> Bool {
        storage.withLock { $0.issuedNonces.contains(nonce) }
    }
}
