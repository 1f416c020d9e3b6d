package import Foundation

/// How many silent pushes courierd delivers to an app (docs/background-model.md #15: "no more than two or three an
/// hour"): a bucket per app holding ``capacity`` deliveries, refilled by one every ``refillInterval``. Pushes that
/// arrive while one is waiting (for the app to finish the last one, or for the budget) are coalesced into that one:
/// the newest payload is delivered, once. Visible (alert) pushes are not counted: they are shown at once.
///
/// A value with no clock: every call takes the time.
package struct PushBudget: Sendable, Equatable {
    /// What became of an offered push.
    package enum Decision: Sendable, Equatable {
        /// Deliver it now.
        case deliver
        /// Merged into the push already waiting; delivered with it (as the newest payload).
        case coalesced
        /// Waits until the app has finished its current delivery and its budget allows (``takeDue(at:)``).
        case queued
    }

    private struct AppState: Sendable, Equatable {
        var tokens: Double
        var updatedAt: Date
        /// A delivery is with the app (its handler has not finished).
        var inFlight = false
        /// The push waiting, newest payload, and how many were merged into it.
        var waiting: PushNotification?
        var merged = 0
    }

    package var capacity: Double
    package var refillInterval: TimeInterval
    private var apps: [String: AppState] = [:]

    package init(capacity: Double = 3, refillInterval: TimeInterval = 20 * 60) {
        self.capacity = capacity
        self.refillInterval = refillInterval
    }

    /// A silent push for `app` arrived at `now`.
    package mutating func offer(_ push: PushNotification, to app: String, at now: Date) -> Decision {
        var state = refilled(app, at: now)
        defer { apps[app] = state }
        if state.waiting != nil {
            state.waiting = push
            state.merged += 1
            return .coalesced
        }
        if !state.inFlight && state.tokens >= 1 {
            state.tokens -= 1
            state.inFlight = true
            return .deliver
        }
        state.waiting = push
        state.merged = 0
        return .queued
    }

    /// The app finished handling its delivery (or overran): a waiting push may go.
    /// Forgets the pushes waiting for a token (courierd stops: they were in memory only).
    package mutating func dropWaiting() {
        for app in apps.keys {
            apps[app]?.waiting = nil
            apps[app]?.merged = 0
        }
    }

    package mutating func finished(_ app: String, at now: Date) {
        var state = refilled(app, at: now)
        state.inFlight = false
        apps[app] = state
    }

    /// The waiting pushes that may be delivered at `now` (each with how many pushes it stands for), taken.
    package mutating func takeDue(at now: Date) -> [(app: String, push: PushNotification, pushes: Int)] {
        var due: [(String, PushNotification, Int)] = []
        for app in apps.keys.sorted() {
            var state = refilled(app, at: now)
            if let push = state.waiting, !state.inFlight, state.tokens >= 1 {
                state.tokens -= 1
                state.inFlight = true
                due.append((app, push, state.merged + 1))
                state.waiting = nil
                state.merged = 0
            }
            apps[app] = state
        }
        return due
    }

    /// When the budget next lets a waiting push go, for apps not busy with a delivery; nil when none waits.
    package func nextDue(after now: Date) -> Date? {
        apps.values.compactMap { state -> Date? in
            guard state.waiting != nil, !state.inFlight else {
                return nil
            }
            let tokens = refilledState(state, at: now).tokens
            return tokens >= 1 ? now : now.addingTimeInterval((1 - tokens) * refillInterval)
        }.min()
    }

    private func refilled(_ app: String, at now: Date) -> AppState {
        refilledState(apps[app] ?? AppState(tokens: capacity, updatedAt: now), at: now)
    }

    private func refilledState(_ state: AppState, at now: Date) -> AppState {
        var state = state
        let elapsed = max(0, now.timeIntervalSince(state.updatedAt))
        state.tokens = min(capacity, state.tokens + elapsed / refillInterval)
        state.updatedAt = now
        return state
    }
}
