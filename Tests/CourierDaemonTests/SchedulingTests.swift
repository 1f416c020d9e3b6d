import Courier
import CourierDaemon
import Foundation
import Testing

/// The daemon's timing rules on a hand-moved clock: retries of failed background transfers, and how often an app
/// may be woken.
@Suite("courierd retries and the resume rate limiter")
struct SchedulingTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("network failures are retried after 30 s, 60 s, 120 s …, capped; other errors end the task")
    func retries() {
        let policy = RetryPolicy(initialDelay: 30, maximumDelay: 100)
        let deadline = Self.start.addingTimeInterval(7 * 24 * 3600)
        let lost = CourierError(.networkConnectionLost, "reset")
        func decide(_ error: CourierError, attempt: Int) -> RetryPolicy.Decision {
            policy.decide(after: error, attempt: attempt, now: Self.start, deadline: deadline)
        }
        #expect(decide(lost, attempt: 1) == .retry(at: Self.start + 30))
        #expect(decide(lost, attempt: 2) == .retry(at: Self.start + 60))
        #expect(decide(lost, attempt: 3) == .retry(at: Self.start + 100))
        #expect(policy.delay(beforeAttempt: 1_000) == 100)
        for code in [CourierError.Code.timedOut, .cannotConnectToHost, .cannotFindHost] {
            guard case .retry = decide(CourierError(code), attempt: 1) else {
                Issue.record("\(code) was not retried")
                continue
            }
        }
        for code in [CourierError.Code.badServerResponse, .cannotResume, .insecureRedirect, .cancelled] {
            let error = CourierError(code, "final")
            #expect(decide(error, attempt: 1) == .fail(error))
        }
    }

    @Test("a retry that would start after the resource timeout fails the task with timedOut instead")
    func deadline() {
        let policy = RetryPolicy(initialDelay: 30)
        let deadline = Self.start.addingTimeInterval(45)
        let lost = CourierError(.networkConnectionLost, "reset")
        let first = policy.decide(after: lost, attempt: 1, now: Self.start, deadline: deadline)
        #expect(first == .retry(at: Self.start + 30))
        guard case .fail(let error) = policy.decide(after: lost, attempt: 2, now: Self.start + 30, deadline: deadline)
        else {
            Issue.record("retried past the resource timeout")
            return
        }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("reset"))
    }

    @Test("each wake doubles the delay: 60 s, 120 s, 240 s (nsurlsessiond's field logs)")
    func doubling() {
        var limiter = ResumeRateLimiter()
        var now = Self.start
        #expect(limiter.earliestWake(of: "app", now: now) == now)
        var delays: [TimeInterval] = []
        for _ in 0..<4 {
            now = limiter.earliestWake(of: "app", now: now)
            limiter.recordWake(of: "app", at: now)
            delays.append(limiter.delay(of: "app", now: now))
        }
        #expect(delays == [60, 120, 240, 480])
        #expect(limiter.earliestWake(of: "app", now: now) == now + 480)
        // Another app is not held back.
        #expect(limiter.earliestWake(of: "other", now: now) == now)
    }

    @Test("the delay resets when the app comes to the foreground, or when as long again passes without a wake")
    func resets() {
        var limiter = ResumeRateLimiter()
        limiter.recordWake(of: "app", at: Self.start)
        limiter.recordWake(of: "app", at: Self.start + 60)
        #expect(limiter.delay(of: "app", now: Self.start + 60) == 120)
        limiter.appCameToForeground("app")
        #expect(limiter.delay(of: "app", now: Self.start + 61) == 0)
        #expect(limiter.earliestWake(of: "app", now: Self.start + 61) == Self.start + 61)

        limiter.recordWake(of: "app", at: Self.start + 100)
        limiter.recordWake(of: "app", at: Self.start + 160)
        #expect(limiter.delay(of: "app", now: Self.start + 200) == 120)
        // 120 s after the delay ran out (at +280), with no wake: reset.
        #expect(limiter.delay(of: "app", now: Self.start + 399) == 120)
        #expect(limiter.delay(of: "app", now: Self.start + 400) == 0)
        limiter.recordWake(of: "app", at: Self.start + 400)
        #expect(limiter.delay(of: "app", now: Self.start + 400) == 60)
    }

    @Test("the delay is capped")
    func cap() {
        var limiter = ResumeRateLimiter(initialDelay: 60, maximumDelay: 200)
        var now = Self.start
        for _ in 0..<5 {
            limiter.recordWake(of: "app", at: now)
            now = limiter.earliestWake(of: "app", now: now)
        }
        #expect(limiter.delay(of: "app", now: now) == 200)
    }
}
