import Foundation

/// A resumable upload (IETF draft "Resumable Uploads for HTTP", interop version 6, which Apple's URLSession speaks
/// since iOS 17): the server named the upload's resource in a `104 Upload Resumption Supported`; when the upload is
/// cut off, the task asks it how much it has (`HEAD`, `Upload-Offset`) and sends the rest (`PATCH` with
/// `Upload-Offset`), instead of starting over.
struct UploadResumption: Sendable, Equatable {
    /// The draft's interop version Courier speaks, sent in `Upload-Draft-Interop-Version`.
    static let interopVersion = "6"
    /// Offset probes and appends after failures, at most.
    static let maximumAttempts = 3

    enum Phase: Sendable, Equatable {
        /// The upload (or its last append) is in flight.
        case sending
        /// Hop `hop` asks the server for its offset.
        case probing(hop: Int)
        /// Hop `hop` sends the body from `offset`.
        case appending(hop: Int, offset: Int64)
    }

    /// The upload's resource, from the 104's `Location`.
    var url: URL
    var phase = Phase.sending
    var attempts = 0
    /// What ended the exchange being resumed: reported when resuming fails.
    var failure: CourierError?
    /// The offset the probe read (`Upload-Offset`).
    var offset: Int64?
    /// Known before the task starts (courierd's journal of an earlier attempt): the first exchange is the probe, and
    /// a probe that fails starts the upload over instead of failing.
    var probesFirst = false

    /// Where the body the current hop sends starts in the whole body.
    var sendOffset: Int64 {
        if case .appending(_, let offset) = phase {
            return offset
        }
        return 0
    }

    /// The fields of the first request of an upload task: it offers resumption.
    static let offerFields = ["Upload-Draft-Interop-Version": interopVersion, "Upload-Complete": "?1"]

    /// The offset probe.
    func probe() -> TaskRequest {
        TaskRequest(url: url, method: "HEAD", headerFields: ["Upload-Draft-Interop-Version": Self.interopVersion])
    }

    /// The append of the body from `offset`.
    func append(from offset: Int64) -> TaskRequest {
        TaskRequest(
            url: url,
            method: "PATCH",
            headerFields: [
                "Upload-Draft-Interop-Version": Self.interopVersion,
                "Upload-Offset": String(offset),
                "Upload-Complete": "?1",
                "Content-Type": "application/partial-upload",
            ]
        )
    }

    /// A failure an upload can be resumed after: the exchange was cut, not refused.
    static func resumes(after error: CourierError) -> Bool {
        switch error.code {
        case .networkConnectionLost, .timedOut, .notConnectedToInternet, .cannotConnectToHost: true
        default: false
        }
    }
}
