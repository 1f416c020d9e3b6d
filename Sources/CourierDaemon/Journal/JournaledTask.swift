package import Courier
package import Foundation

/// One background task as the journal keeps it: what the app asked for and how far the transfer got.
package struct JournaledTask: Sendable, Equatable {
    /// Where a journaled task is in its life.
    package enum State: String, Sendable, Codable {
        /// Accepted, not started (waiting for its turn, for conditions, or for a retry).
        case waiting
        case running
        case suspended
        /// Its completion event is journaled; the record goes once the app acknowledged it.
        case completed
    }

    package var session: String
    package var spec: IPCMessage.BackgroundTask
    package var state: State
    /// The contiguous prefix of the partial file, as of the last checkpoint.
    package var bytesOnDisk: Int64
    package var expectedLength: Int64
    /// The strong validator (ETag or Last-Modified) a resumed range must match.
    package var validator: String?
    package var checkpointedAt: Date?

    package var identifier: Int { spec.identifier }
}
