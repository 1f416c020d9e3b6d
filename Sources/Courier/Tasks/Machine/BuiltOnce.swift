import CourierConcurrency

/// A value made the first time someone asks for it, then shared by everyone who asks, from any thread.
///
/// For what a response needs only for some callers: FoundationNetworking's `HTTPURLResponse` costs more than the
/// rest of receiving a small response (its initialiser sanitises and case-folds every header field), and the
/// swift-http-types API never asks for one.
final class BuiltOnce<Value: Sendable>: Sendable {
    private let value = LockedValue<Value?>(nil)

    init() {}

    /// The value `make` built the first time; `make` runs at most once, under the lock.
    func value(_ make: () -> Value) -> Value {
        value.withLock { value in
            if let value {
                return value
            }
            let made = make()
            value = made
            return made
        }
    }
}
