package import Foundation

/// Byte counters a backend reports with RESPONSE, PROGRESS and COMPLETE events.
package struct TransferProgress: Codable, Sendable, Equatable {
    package var received: Int64 = 0
    package var expectedToReceive: Int64 = -1
    package var sent: Int64 = 0
    package var expectedToSend: Int64 = -1
    /// A file sink's bytes written so far, up to the file offset (the in-process engine's; nil otherwise).
    package var bytesOnDisk: Int64?

    package init(received: Int64 = 0, expectedToReceive: Int64 = -1, sent: Int64 = 0, expectedToSend: Int64 = -1) {
        self.received = received
        self.expectedToReceive = expectedToReceive
        self.sent = sent
        self.expectedToSend = expectedToSend
    }
}

/// How a transfer ended.
package struct TransferCompletion: Codable, Sendable, Equatable {
    /// nil on success. Its `failingURL` is not set: the task knows the URL of the hop.
    package var error: CourierError?
    /// The length of the contiguous prefix written to a file sink.
    package var bytesOnDisk: Int64 = 0
    package var metrics = TransferMetrics()
    /// The digest of those `bytesOnDisk` bytes, when the transfer computed one (``TransferSpec/digest``).
    package var digest: Checksum?
    /// The status of the final response, when one arrived: set by courierd, which keeps it with the task's end so
    /// that a listing says how a task that "succeeded" with an HTTP error ended (`failed: HTTP 404`).
    package var finalStatus: Int?
    /// A hop that stopped before its request for the delegate to judge its server (``ConnectionOptions/Trust/ask``):
    /// the server's chain and the verification's verdict.
    package var peerTrust: PeerTrustReport?

    package init(
        error: CourierError?,
        bytesOnDisk: Int64 = 0,
        metrics: TransferMetrics = TransferMetrics(),
        digest: Checksum? = nil,
        finalStatus: Int? = nil,
        peerTrust: PeerTrustReport? = nil
    ) {
        self.error = error
        self.bytesOnDisk = bytesOnDisk
        self.metrics = metrics
        self.digest = digest
        self.finalStatus = finalStatus
        self.peerTrust = peerTrust
    }

    package var succeeded: Bool { error == nil }
    package var wasCancelled: Bool { error?.code == .cancelled }
}

/// One event of one transfer, as a serialisable value. Events of one transfer arrive in order: at most one
/// RESPONSE (the final one, or a held one), DATA in order, PROGRESS any time, then exactly one COMPLETE.
package struct TransferEvent: Codable, Sendable, Equatable {
    package enum Payload: Codable, Sendable, Equatable {
        /// The final response of the transfer, or a held 3xx / 401 / 407 / asked response waiting for
        /// ``TransferBackend/decide(_:_:)`` or a cancel.
        case response(held: Bool, resumeOffset: Int64, head: ResponseHead)
        /// Body bytes of a memory-sink transfer, in order.
        case data(Data)
        /// Counters moved.
        case progress
        /// The transfer ended; its id is dead.
        case complete(TransferCompletion)
        /// The backend went on from bytes it kept on disk (courierd, after a restart or from resume data): at
        /// `offset`, 0 when the entity changed and it started again; `expectedTotal` is the whole entity's length
        /// or -1.
        case resumed(offset: Int64, expectedTotal: Int64)
        /// The backend followed redirects itself (courierd): the final response comes from `url`, which becomes the
        /// task's current request. Sent right before that response.
        case relocated(url: String)
        /// The backend wrote the body to a file of its own (courierd, which keeps it until the app has seen the
        /// events): the task's download is the file at `path`. Sent right before the successful COMPLETE.
        case downloaded(path: String)
        /// An informational (1xx) response before the final one (e.g. `104 Upload Resumption Supported`).
        case informational(ResponseHead)
        /// Where each segment of a segmented download stands (``DownloadSegment``); sent with its progress and before
        /// its COMPLETE, for the task's resume data.
        case segments([DownloadSegment])
        /// The task's `earliestBeginDate` has passed (courierd): the backend waits for
        /// ``TransferBackend/decide(_:_:)`` with ``TransferDecision/beginDelayed(_:)``, or a cancel, before the
        /// transfer begins; without an answer it begins as it is.
        case delayedStart
    }

    package var id: TransferID
    /// The backend's handle of the transfer (what ``TransferBackend/submit(_:as:)`` returned).
    package var transfer: UInt64
    package var progress: TransferProgress
    package var payload: Payload

    package init(id: TransferID, transfer: UInt64, progress: TransferProgress, payload: Payload) {
        self.id = id
        self.transfer = transfer
        self.progress = progress
        self.payload = payload
    }
}
