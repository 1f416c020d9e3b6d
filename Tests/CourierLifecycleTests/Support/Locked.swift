import Foundation

/// A value behind an `NSLock`, for test bookkeeping shared across threads.
///
/// Not `Synchronization.Mutex`: on Linux ThreadSanitizer cannot see that lock and would report the
/// accesses it protects as races; `NSLock` is a pthread mutex, which it intercepts.
///
/// `@unchecked Sendable`: `value` is only touched inside ``withLock(_:)`` with `lock` held.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value)
    }
}
