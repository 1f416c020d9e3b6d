import CourierConcurrency

/// Where this process's application stands, for the other Courier modules: courierd hears of it, so that a
/// background transfer created while the app is in the background is discretionary and waits for the app's relaunch
/// delay, so that the delay resets when the user brings the app to the front (docs/background-model.md #7 and #8),
/// and so that courierd knows a suspended instance (to continue it for work, or reclaim it when idle) from the moment
/// it stops.
///
/// Only ``Application/shared`` publishes, on its transitions (launch, entering the background, entering the
/// foreground) and around stopping the process when it is suspended. A process that never launches an `Application`
/// counts as in the foreground and never suspended: a tool the user runs.
package enum ApplicationPresence {
    /// What courierd is told.
    package struct Presence: Sendable, Equatable {
        package var inForeground = true
        /// The lifecycle is stopping the process (or has): set just before the stop, cleared once it continues.
        package var suspended = false
    }

    private struct State {
        var presence = Presence()
        var observers: [UInt64: @Sendable (Presence) -> Void] = [:]
        var nextToken: UInt64 = 1
    }

    private static let state = LockedValue(State())

    /// Where the application stands now. Callable from any thread.
    package static var current: Presence {
        state.withLock { $0.presence }
    }

    /// Whether the application is in the foreground now. Callable from any thread.
    package static var isInForeground: Bool {
        current.inForeground
    }

    /// Calls `observer` once per change, with the new presence, on the thread of the transition (the application's
    /// callback queue), before ``publish(inForeground:)`` or ``publish(suspended:)`` returns, until
    /// ``removeObserver(_:)`` with the returned token.
    package static func addObserver(_ observer: @escaping @Sendable (Presence) -> Void) -> UInt64 {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.observers[token] = observer
            return token
        }
    }

    package static func removeObserver(_ token: UInt64) {
        state.withLock { _ = $0.observers.removeValue(forKey: token) }
    }

    /// The shared application's state changed; observers hear of it when that changes the answer.
    package static func publish(inForeground: Bool) {
        publish { $0.inForeground = inForeground }
    }

    /// The shared application is about to stop its process (true; observers have heard when this returns, so what
    /// they write is sent before the stop), or was continued (false).
    package static func publish(suspended: Bool) {
        publish { $0.suspended = suspended }
    }

    private static func publish(_ change: (inout Presence) -> Void) {
        let (presence, observers) = state.withLock { state -> (Presence, [@Sendable (Presence) -> Void]) in
            let before = state.presence
            change(&state.presence)
            guard state.presence != before else {
                return (state.presence, [])
            }
            return (state.presence, state.observers.sorted { $0.key < $1.key }.map(\.value))
        }
        for observer in observers {
            observer(presence)
        }
    }
}
