@testable import Courier

extension SessionTask {
    /// The final response's head as the task holds it (every field line, in order, the HTTP version): what the tests
    /// compare across backends, beneath the `HTTPURLResponse` that joins repeated fields.
    var receivedHead: ResponseHead? {
        storage.withLock { $0.finalResponse?.head }
    }
}
