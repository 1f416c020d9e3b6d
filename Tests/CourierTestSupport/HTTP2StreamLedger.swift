import CourierConcurrency

/// What an HTTP/2 connection of the test server has seen of its client's streams: the highest stream ID, which a
/// GOAWAY must name as the last stream the server acted on (RFC 9113 §6.8), or the client would take streams the
/// server is answering for refused ones.
///
/// One per connection, made by `ServerPipeline.configureHTTP2` and shared by the handlers of its streams.
final class HTTP2StreamLedger: Sendable {
    private let highest = LockedValue(0)

    /// The highest stream ID a request arrived on.
    var highestStreamID: Int {
        highest.withLock { $0 }
    }

    /// A request arrived on stream `id`.
    func noteStream(_ id: Int) {
        highest.withLock { $0 = max($0, id) }
    }
}
