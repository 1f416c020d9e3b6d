package import Foundation

/// How often courierd may resume or relaunch an app in the background (docs/background-model.md #8, nsurlsessiond's
/// limiter): each wake doubles the app's delay (60 s, 120 s, 240 s, …). The delay resets when the user brings the
/// app to the foreground, or when, after the delay ran out, as long again passes with no wake. Tasks an app creates
/// in the background wait until its delay has passed.
///
/// A value with no clock: every call takes the time, so a test can replay a day in microseconds.
package struct ResumeRateLimiter: Sendable, Equatable {
    private struct AppState: Sendable, Equatable {
        var delay: TimeInterval = 0
        var lastWake: Date?
    }

    package var initialDelay: TimeInterval
    package var maximumDelay: TimeInterval
    private var apps: [String: AppState] = [:]

    package init(initialDelay: TimeInterval = 60, maximumDelay: TimeInterval = 24 * 3600) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// The earliest time `app` may be woken (now or later).
    package func earliestWake(of app: String, now: Date) -> Date {
        guard let state = apps[app], let lastWake = state.lastWake else {
            return now
        }
        return max(now, lastWake.addingTimeInterval(state.delay))
    }

    /// The app's current delay (0 when it may be woken at any time).
    package func delay(of app: String, now: Date) -> TimeInterval {
        guard let state = apps[app], let lastWake = state.lastWake else {
            return 0
        }
        return now >= lastWake.addingTimeInterval(2 * state.delay) ? 0 : state.delay
    }

    /// courierd resumed or relaunched `app` at `now`: its delay doubles (or starts at ``initialDelay`` when a whole
    /// delay had passed without a wake).
    package mutating func recordWake(of app: String, at now: Date) {
        var state = apps[app] ?? AppState()
        let current = delay(of: app, now: now)
        state.delay = current == 0 ? initialDelay : min(maximumDelay, current * 2)
        state.lastWake = now
        apps[app] = state
    }

    /// The user brought `app` to the foreground: no delay any more.
    package mutating func appCameToForeground(_ app: String) {
        apps[app] = nil
    }
}
