package import Courier
package import Foundation

/// One background task as the journal keeps it: what the app asked for and how far the transfer got.
package struct JournaledTask: Sendable, Equatable {
    /// Where a journaled task is in its life.
    package enum State: String, Sendable, Codable {
        /// Accepted, not suspended: waiting for its turn, for conditions or for a retry (``retryAt``), or moving
        /// bytes (an attempt's start is not journaled: a restart starts the task again either way).
        case waiting
        /// Written when the app resumes a task it suspended during an attempt (and by earlier versions at every
        /// attempt's start); restored as ``waiting`` is.
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
    /// The last checkpoint, with the partial file a download resumes from after a crash.
    package var checkpoint: TransferCheckpoint? {
        get { checkpointBox?.value }
        set { checkpointBox = newValue.map(Boxed.init) }
    }
    /// ``checkpoint``, boxed: a queued task has none, and would otherwise carry its 440 bytes.
    private var checkpointBox: Boxed<TransferCheckpoint>?
    package var bytesSent: Int64 = 0
    package var expectedToSend: Int64 = -1
    /// Failed attempts so far.
    package var attempts: Int = 0
    /// When a task waiting after a failure may try again.
    package var retryAt: Date?
    /// When the task was journaled; its resource timeout counts from here.
    package var createdAt: Date = Date(timeIntervalSince1970: 0)

    package var identifier: Int { spec.identifier }

    package init(
        session: String,
        spec: IPCMessage.BackgroundTask,
        state: State,
        bytesOnDisk: Int64,
        expectedLength: Int64,
        validator: String? = nil,
        checkpointedAt: Date? = nil,
        checkpoint: TransferCheckpoint? = nil,
        bytesSent: Int64 = 0,
        expectedToSend: Int64 = -1,
        attempts: Int = 0,
        retryAt: Date? = nil,
        createdAt: Date = Date(timeIntervalSince1970: 0)
    ) {
        self.session = session
        self.spec = spec
        self.state = state
        self.bytesOnDisk = bytesOnDisk
        self.expectedLength = expectedLength
        self.validator = validator
        self.checkpointedAt = checkpointedAt
        self.checkpoint = checkpoint
        self.bytesSent = bytesSent
        self.expectedToSend = expectedToSend
        self.attempts = attempts
        self.retryAt = retryAt
        self.createdAt = createdAt
    }
}
