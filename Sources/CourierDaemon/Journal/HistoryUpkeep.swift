import CourierConcurrency
import Foundation

/// When a session's history is looked after (ended tasks past ``Journal/historyRetention`` dropped, the history cut
/// back to ``Journal/historyLimit``): once a tenth of the limit has ended since the last time, or an hour has passed,
/// not at every acknowledgement. Done at each one, it counted and scanned the session's kept tasks every time: 18 % of
/// courierd's CPU when 10,000 downloads ended one acknowledgement after another (W6).
///
/// In memory only: after a start, a session's first acknowledgement looks after its history.
package final class HistoryUpkeep: Sendable {
    /// How many tasks may end between two looks.
    package static let endedBetween = Journal.historyLimit / 10
    /// The longest time between two looks while tasks end.
    static let interval: TimeInterval = 3600

    private struct Since {
        var ended = 0
        var at: Date
    }

    private let sessions = LockedValue<[String: Since]>([:])

    /// `ended` tasks of `session` joined its history at `now`: whether to look after it now (which then counts as
    /// done).
    func isDue(_ session: String, ended: Int, now: Date) -> Bool {
        sessions.withLock { sessions in
            guard var since = sessions[session] else {
                sessions[session] = Since(at: now)
                return true
            }
            since.ended += ended
            guard since.ended >= Self.endedBetween || now.timeIntervalSince(since.at) >= Self.interval else {
                sessions[session] = since
                return false
            }
            sessions[session] = Since(at: now)
            return true
        }
    }
}
