import Foundation

/// The one line a client executable (`bench-courier`, …) prints on success: what it moved, so that the harness can
/// check the run.
public struct ClientReport: Sendable, Codable {
    /// Transfers that finished with a 2xx status and the expected body length.
    public var succeeded: Int
    /// Body bytes received (GET) or sent (PUT).
    public var bytes: Int
    /// Bytes of memory per queued task, for the queued-tasks measurement only.
    public var bytesPerQueuedTask: Double?

    public init(succeeded: Int, bytes: Int, bytesPerQueuedTask: Double? = nil) {
        self.succeeded = succeeded
        self.bytes = bytes
        self.bytesPerQueuedTask = bytesPerQueuedTask
    }

    public func line() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    public init(line: String) throws {
        self = try JSONDecoder().decode(ClientReport.self, from: Data(line.utf8))
    }
}
