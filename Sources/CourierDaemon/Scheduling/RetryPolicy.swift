package import Courier
package import Foundation

/// When a background transfer that failed on the network is tried again (docs/background-model.md #6 and #17):
/// network errors and timeouts are retried after an exponential backoff, for as long as the task's resource timeout
/// allows; a download that ran out of disk space waits for room (``StorageSpace``) for as long; anything else ends
/// the task.
package struct RetryPolicy: Sendable, Equatable {
    /// The first delay; each later one doubles, up to ``maximumDelay``. WorkManager's default is 30 s.
    package var initialDelay: TimeInterval
    package var maximumDelay: TimeInterval

    package init(initialDelay: TimeInterval = 30, maximumDelay: TimeInterval = 3600) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// What to do after a failure.
    package enum Decision: Sendable, Equatable {
        /// Try again at that time (the task waits until then, and says so).
        case retry(at: Date)
        /// Wait until the file system has room again, then go on from the partial file (the attempt ran out of space:
        /// `insufficientSpace`).
        case waitForSpace
        /// End the task with this error: it is not a network failure, or the resource timeout would pass first.
        case fail(CourierError)
    }

    /// The errors a background session retries instead of reporting: the network, not the request, failed.
    package static let retriedCodes: Set<CourierError.Code> = [
        .timedOut, .networkConnectionLost, .cannotConnectToHost, .cannotFindHost,
    ]

    /// The decision after the `attempt`-th failure (1 for the first), at `now`, for a task whose resource timeout
    /// ends at `deadline`.
    package func decide(after error: CourierError, attempt: Int, now: Date, deadline: Date) -> Decision {
        if error.code == .insufficientSpace, now < deadline {
            return .waitForSpace
        }
        guard RetryPolicy.retriedCodes.contains(error.code) else {
            return .fail(error)
        }
        let next = now.addingTimeInterval(delay(beforeAttempt: attempt + 1))
        guard next < deadline else {
            var expired = error
            expired.code = .timedOut
            expired.message = "the resource timeout expired while retrying (last failure: \(error.message))"
            return .fail(expired)
        }
        return .retry(at: next)
    }

    /// The wait before attempt number `attempt` (2 for the first retry).
    package func delay(beforeAttempt attempt: Int) -> TimeInterval {
        let doublings = max(0, attempt - 2)
        return min(maximumDelay, initialDelay * pow(2, Double(min(doublings, 62))))
    }
}
