import Foundation

/// One URL of a `courier get` run, decided before any task starts.
struct TransferPlan: Sendable {
    /// The position of the URL on the command line.
    let index: Int
    let url: URL
    /// The destination name in the output directory (sanitised, unique in the run, `-N` suffixed if needed).
    let name: String
    /// Resume data from `NAME.part.resume` when `--continue` found a usable partial download.
    let resumeData: Data?
    /// Whether a partial download of this URL was kept for `name` when the run started (deleted on success).
    let hasKeptPartial: Bool
}

/// What a transfer (a download of `courier get` or an upload of `courier put`) is doing, as the progress display
/// sees it.
struct TransferProgress: Sendable {
    enum Phase: Sendable, Equatable {
        /// Not started yet (queued by the session, or waiting for a connection).
        case waiting
        case running
        case succeeded
        case failed
        /// Stopped by SIGINT, SIGTERM or SIGHUP.
        case interrupted
    }

    var phase = Phase.waiting
    /// Bytes of the file so far (received, or sent for an upload), including bytes kept from an earlier run.
    var written: Int64 = 0
    /// The size of the whole file, or -1 when the server did not say.
    var expected: Int64 = -1
    /// Bytes that were already on disk when this run resumed the transfer.
    var resumedOffset: Int64 = 0
    var startedAt: ContinuousClock.Instant?
    var endedAt: ContinuousClock.Instant?
    /// The name the response's `Content-Disposition` asked for (sanitised), once the response arrived; it
    /// replaces the plan's name on the progress lines and as the destination.
    var name: String?
    /// The name the file was saved as (differs from the intended one when a file of that name exists).
    var savedAs: String?

    /// Bytes received in this run.
    var receivedThisRun: Int64 {
        max(written - resumedOffset, 0)
    }

    var isFinished: Bool {
        phase == .succeeded || phase == .failed || phase == .interrupted
    }
}

/// Something to print once, in the order it happened.
enum Report: Sendable {
    /// A transfer succeeded (a file was saved, or uploaded).
    case succeeded(index: Int)
    /// A transfer failed; the message says why (a `CourierError` description, an HTTP status, a file error).
    case failed(index: Int, message: String)
    /// Progress worth a line of its own (a resume, a restart). Not shown with `--quiet`.
    case notice(String)
    /// Something the user should know even with `--quiet`.
    case warning(String)
}

/// What the main loop wakes up for.
enum RunEvent: Sendable {
    /// Time to redraw the progress display.
    case tick
    /// A transfer finished or something was reported.
    case changed
    /// SIGINT, SIGTERM or SIGHUP arrived.
    case interrupt
    /// The session is invalid and has removed its staging files.
    case invalidated
}

/// A consistent copy of the run's state, taken under the coordinator's lock.
struct RunSnapshot: Sendable {
    var transfers: [TransferProgress]
    var reports: [Report]
    var remaining: Int
    var startedAt: ContinuousClock.Instant
    var lastEndedAt: ContinuousClock.Instant?
}
