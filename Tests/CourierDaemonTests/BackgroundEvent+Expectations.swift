import CourierIPC
import Foundation

/// Short forms of courierd's events for the tests' expectations.
extension IPCMessage.BackgroundEvent {
    /// A download's coalesced progress: `total` of `expected` bytes received.
    static func wrote(_ total: Int64, of expected: Int64) -> Self {
        Self(.progress, progress: TransferProgress(received: total, expectedToReceive: expected))
    }

    /// The task's last event, with counters `progress` (nothing moved, nothing known, by default).
    static func completed(
        _ error: CourierError?,
        _ progress: TransferProgress = TransferProgress(),
        response: IPCMessage.BackgroundResponse? = nil
    ) -> Self {
        .complete(error, response: response, progress: progress)
    }

    /// The error the task ended with, if this is its last event.
    var endingError: CourierError?? {
        completion.map(\.error)
    }
}

extension IPCMessage.BackgroundEvent {
    /// A finished download's file.
    static func downloaded(_ path: String) -> Self {
        Self(.downloaded(path: path), progress: TransferProgress())
    }

    /// Whether this is the task's last event.
    var isCompletion: Bool {
        completion != nil
    }

    /// Whether this is coalesced progress.
    var isProgress: Bool {
        payload == .progress
    }

    /// The file a finished download handed over, if this event does.
    var downloadedPath: String? {
        if case .downloaded(let path) = payload { path } else { nil }
    }

    /// The final response's head, if this event is it.
    var responseHead: ResponseHead? {
        if case .response(_, _, let head) = payload { head } else { nil }
    }

    /// An upload's response body, if this event is it.
    var body: Data? {
        if case .data(let data) = payload { data } else { nil }
    }

    /// Where a resumed download went on from, and the whole length, if this event says so.
    var resumedAt: (offset: Int64, expectedTotal: Int64)? {
        if case .resumed(let offset, let expectedTotal) = payload { (offset, expectedTotal) } else { nil }
    }
}
