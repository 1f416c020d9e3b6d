/// A background task's expiration handler, as received by
/// ``Application/beginBackgroundTask(withName:expirationHandler:)``.
///
/// `@unchecked Sendable`: the closure is deliberately not required to be `Sendable` (nor `sending`),
/// as UIKit's was not, so that the iOS idiom
/// `var id = BackgroundTaskIdentifier.invalid; id = app.beginBackgroundTask { app.endBackgroundTask(id) }`
/// compiles in Swift 6 without diagnostics. What makes it safe:
/// - the documented contract: the handler runs on the callback queue (the main queue), once, so
///   whatever it captures must be safe to use there — the same contract as a delegate method;
/// - inside the library it is stored only in the lifecycle state machine, under the application's
///   lock, and the state machine hands it out at most once (taking it out of the task's record);
/// - the application calls it exactly once, on the serial callback queue, and drops it. It is never
///   called concurrently with itself or touched again.
struct ExpirationHandler: @unchecked Sendable {
    private let body: () -> Void

    init(_ body: @escaping () -> Void) {
        self.body = body
    }

    /// Must be called at most once, on the callback queue.
    func callAsFunction() {
        self.body()
    }
}
