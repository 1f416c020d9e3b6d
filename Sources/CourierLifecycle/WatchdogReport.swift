/// What the watchdog writes to standard error before it terminates the process.
///
/// ``description`` is the text; the structured fields are there for tests and custom
/// ``ProcessControl/terminate`` handlers. Example (the first line is one line in the report):
/// ```
/// courier-lifecycle watchdog: the background time budget of 180.000 s ran out with 1 background task
/// still open; terminating with exit status 96
///   - background task 3 "flush", open for 181.250 s
/// ```
public struct WatchdogReport: Sendable, Hashable, CustomStringConvertible {
    /// Why the watchdog fired.
    public enum Reason: Sendable, Hashable {
        /// The background time budget ran out with background tasks still open.
        case backgroundTimeExpired(budget: Duration)
        /// A delegate method did not return within its time limit. `method` is its name, for example
        /// `applicationDidEnterBackground(_:)`.
        case delegateTimeout(method: String, limit: Duration)
    }

    public var reason: Reason
    /// The open background tasks, oldest first.
    public var openTasks: [OpenBackgroundTask]

    public init(reason: Reason, openTasks: [OpenBackgroundTask]) {
        self.reason = reason
        self.openTasks = openTasks
    }

    /// The status the process exits with.
    public var exitStatus: Application.ExitStatus {
        switch self.reason {
        case .backgroundTimeExpired: .backgroundTimeExpired
        case .delegateTimeout: .delegateTimeout
        }
    }

    public var description: String {
        let count = self.openTasks.count
        let tasks = "\(count) background task\(count == 1 ? "" : "s")"
        var text = "courier-lifecycle watchdog: "
        switch self.reason {
        case .backgroundTimeExpired(let budget):
            text += "the background time budget of \(formatSeconds(budget)) ran out with \(tasks) still open"
        case .delegateTimeout(let method, let limit):
            text += "\(method) did not return within \(formatSeconds(limit)), with \(tasks) open"
        }
        text += "; terminating with exit status \(self.exitStatus)"
        for task in self.openTasks {
            text += "\n  - \(task)"
        }
        return text
    }
}

/// Formats a duration as seconds with millisecond precision: `181.250 s`.
func formatSeconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    var milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    let sign = milliseconds < 0 ? "-" : ""
    milliseconds = abs(milliseconds)
    let fraction = String(milliseconds % 1000)
    return "\(sign)\(milliseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s"
}
