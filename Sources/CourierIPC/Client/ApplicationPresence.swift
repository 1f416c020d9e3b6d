import CourierConcurrency

/// Whether this process's application is in the foreground, for the other Courier modules: courierd hears of it, so
/// that a background transfer created while the app is in the background is discretionary and waits for the app's
/// relaunch delay, and so that the delay resets when the user brings the app to the front (docs/background-model.md
/// #7 and #8).
///
/// Only ``Application/shared`` publishes, on its transitions (launch, entering the background, entering the
/// foreground). A process that never launches an `Application` counts as in the foreground: a tool the user runs.
package enum ApplicationPresence {
    private struct State {
        var inForeground = true
        var observers: [UInt64: @Sendable (Bool) -> Void] = [:]
        var nextToken: UInt64 = 1
    }

    private static let state = LockedValue(State())

    /// Whether the application is in the foreground now. Callable from any thread.
    package static var isInForeground: Bool {
        state.withLock { $0.inForeground }
    }

    /// Calls `observer` once per change, with the new value, on the thread of the transition (the application's
    /// callback queue), until ``removeObserver(_:)`` with the returned token.
    package static func addObserver(_ observer: @escaping @Sendable (Bool) -> Void) -> UInt64 {
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
        let observers = state.withLock { state -> [@Sendable (Bool) -> Void] in
            guard state.inForeground != inForeground else {
                return []
            }
            state.inForeground = inForeground
            return state.observers.sorted { $0.key < $1.key }.map(\.value)
        }
        for observer in observers {
            observer(inForeground)
        }
    }
}
