import Foundation

/// When a background session that lost its connection to courierd tries again, and when it starts courierd itself:
/// the first attempt at once, then pauses of 20 ms growing twice each time up to 0.5 s; courierd is started only once
/// none has answered for the start grace since the connection ended (a courierd restarting by itself, or restarted by
/// the user, gets that long to come back), and after an attempt that started one, not again for as long, the next
/// attempts only connecting, from 20 ms again (the courierd it started, or one that won the lock from it, is coming
/// up); after the session's request timeout, the session gives up. A value with no
/// clock of its own: its caller says what time it is, so tests drive it on a clock of theirs.
struct ReconnectSchedule: Sendable, Equatable {
    /// What to do after an attempt failed.
    enum Step: Sendable, Equatable {
        case tryAgain(after: TimeInterval)
        /// The request timeout has passed since the reconnection began.
        case giveUp
    }

    static let firstPause: TimeInterval = 0.02
    static let longestPause: TimeInterval = 0.5

    private let startGrace: TimeInterval
    private var startFrom: Date
    private let deadline: Date
    private var pause = Self.firstPause

    /// A reconnection that begins `now`, for a connection that ended at `lost` (nil: courierd was found unreachable
    /// before, and is started at the first attempt).
    init(lost: Date?, now: Date, timeout: TimeInterval, startGrace: TimeInterval) {
        self.startGrace = startGrace
        startFrom = (lost ?? .distantPast).addingTimeInterval(startGrace)
        deadline = now.addingTimeInterval(timeout)
    }

    /// Whether an attempt made at `now` starts courierd when none answers.
    func startsDaemon(at now: Date) -> Bool {
        now >= startFrom
    }

    /// The attempt that ended at `now` started courierd and found no connection: the next attempts connect only, from
    /// the first pause again, until the start grace has passed once more.
    mutating func startedDaemon(at now: Date) {
        startFrom = now.addingTimeInterval(startGrace)
        pause = Self.firstPause
    }

    /// The attempt that ended at `now` failed: when to try again, or to give up.
    mutating func failed(at now: Date) -> Step {
        guard now < deadline else {
            return .giveUp
        }
        defer { pause = min(pause * 2, Self.longestPause) }
        return .tryAgain(after: pause)
    }
}
