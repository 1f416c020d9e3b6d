import Foundation
import Testing

@testable import Courier

/// ``ReconnectSchedule`` on a clock that moves only when the test says: a background session that lost courierd.
@Suite("Reconnection: when a background session tries again, starts courierd, gives up")
struct ReconnectScheduleTests {
    static let lost = Date(timeIntervalSinceReferenceDate: 800_000_000)

    @Test("a lost connection: attempts at once, then 20 ms apart, doubling to 0.5 s; courierd started only after the grace")
    func lostConnection() {
        var schedule = ReconnectSchedule(lost: Self.lost, now: Self.lost, timeout: 60, startGrace: 1)
        var now = Self.lost
        var pauses: [TimeInterval] = []
        var startedAt: Date?
        while now < Self.lost.addingTimeInterval(3) {
            if startedAt == nil, schedule.startsDaemon(at: now) {
                startedAt = now
            }
            // Each attempt takes 1 ms to fail.
            now += 0.001
            guard case .tryAgain(let pause) = schedule.failed(at: now) else {
                Issue.record("gave up at \(now.timeIntervalSince(Self.lost)) s")
                return
            }
            pauses.append(pause)
            now += pause
        }
        #expect(Array(pauses.prefix(7)) == [0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5])
        #expect(pauses.allSatisfy { $0 <= ReconnectSchedule.longestPause })
        let waited = startedAt.map { $0.timeIntervalSince(Self.lost) } ?? -1
        // The first attempt at or after 1 s: 0.625 s + 0.5 s + the attempts' milliseconds.
        #expect(waited >= 1 && waited < 1.6, "courierd started \(waited) s after the loss")
    }

    @Test("courierd found unreachable before: the next attempt starts it at once")
    func unreachableBefore() {
        let schedule = ReconnectSchedule(lost: nil, now: Self.lost, timeout: 60, startGrace: 1)
        #expect(schedule.startsDaemon(at: Self.lost))
    }

    @Test("after the request timeout the session gives up, and not a moment before")
    func givesUpAtTimeout() {
        var schedule = ReconnectSchedule(lost: Self.lost, now: Self.lost, timeout: 5, startGrace: 1)
        #expect(schedule.failed(at: Self.lost.addingTimeInterval(4.999)) != .giveUp)
        #expect(schedule.failed(at: Self.lost.addingTimeInterval(5)) == .giveUp)
        #expect(schedule.failed(at: Self.lost.addingTimeInterval(500)) == .giveUp)
    }

    @Test("after an attempt that started courierd: only connections for the grace, from 20 ms again")
    func afterStarting() {
        var schedule = ReconnectSchedule(lost: Self.lost, now: Self.lost, timeout: 60, startGrace: 1)
        var now = Self.lost.addingTimeInterval(2)
        #expect(schedule.startsDaemon(at: now))
        for _ in 0..<6 {
            _ = schedule.failed(at: now)
        }
        // That attempt started one, and the connection still failed (it lost the lock to another, still starting).
        now += 0.3
        schedule.startedDaemon(at: now)
        #expect(schedule.failed(at: now) == .tryAgain(after: ReconnectSchedule.firstPause))
        #expect(!schedule.startsDaemon(at: now.addingTimeInterval(0.999)))
        #expect(schedule.startsDaemon(at: now.addingTimeInterval(1)))
    }
}
