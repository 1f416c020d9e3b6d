import CourierConcurrency
package import CourierIPC

/// The counters behind ``DaemonFigures``: what every session runner's tasks did since courierd started.
package final class DaemonCounters: Sendable {
    private let figures = LockedValue(DaemonFigures())

    package init() {}

    /// A task ended with `completion` (its last event).
    package func ended(_ event: IPCMessage.BackgroundEvent) {
        guard let completion = event.completion else {
            return
        }
        let error = completion.error
        let progress = event.progress
        figures.withLock { figures in
            figures.bytesReceived += max(0, progress.received)
            figures.bytesSent += max(0, progress.sent)
            // An HTTP error is a success as URLSession counts it (the app has the response), but not as a user reads
            // the figures.
            let outcome: String
            if let error {
                outcome = error.code == .cancelled ? "cancelled" : "failure"
            } else {
                outcome = (completion.finalStatus ?? 0) >= 400 ? "HTTP error" : "success"
            }
            figures.completed[outcome, default: 0] += 1
            if let error, error.code != .cancelled {
                figures.failures["\(error.code)", default: 0] += 1
            }
        }
    }

    /// An attempt will be made again after a failure.
    package func retried() {
        figures.withLock { $0.retries += 1 }
    }

    package var snapshot: DaemonFigures {
        figures.withLock { $0 }
    }
}
