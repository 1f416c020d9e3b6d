import Foundation

/// Byte counters a backend reports with RESPONSE, PROGRESS and COMPLETE events.
struct TransferProgress: Codable, Sendable, Equatable {
    var received: Int64 = 0
    var expectedToReceive: Int64 = -1
    var sent: Int64 = 0
    var expectedToSend: Int64 = -1
}

/// How a transfer ended.
struct TransferCompletion: Codable, Sendable, Equatable {
    /// nil on success. Its `failingURL` is not set: the task knows the URL of the hop.
    var error: CourierError?
    /// The length of the contiguous prefix written to a file sink.
    var bytesOnDisk: Int64 = 0
    var metrics = TransferMetrics()

    var succeeded: Bool { error == nil }
    var wasCancelled: Bool { error?.code == .cancelled }
}

/// One event of one transfer, as a serialisable value. Events of one transfer arrive in order: at most one
/// RESPONSE (the final one, or a held one), DATA in order, PROGRESS any time, then exactly one COMPLETE.
struct TransferEvent: Codable, Sendable, Equatable {
    enum Payload: Codable, Sendable, Equatable {
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
    }

    var id: TransferID
    /// The backend's handle of the transfer (what ``TransferBackend/submit(_:as:)`` returned).
    var transfer: UInt64
    var progress: TransferProgress
    var payload: Payload
}
