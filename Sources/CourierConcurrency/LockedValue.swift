#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value protected by a `pthread_mutex_t`, in the manner of `NIOLockedValueBox`. Every module of the
/// package (and its tests) locks with this type.
///
/// Why not `Synchronization.Mutex`: on Linux its lock is a futex driven from the uninstrumented
/// standard library, so ThreadSanitizer cannot see it and reports every access it protects as a
/// race. pthread mutexes are intercepted by ThreadSanitizer, which keeps `--sanitize=thread` runs
/// meaningful.
///
/// `@unchecked Sendable`: `value` is only read or written inside ``withLock(_:)``, with `mutex`
/// held; `mutex` itself is allocated once, never moved, and destroyed only in `deinit`, when no
/// other reference exists. `Value` must be `Sendable`, so nothing taken out of the lock is unsafe
/// to use elsewhere.
package final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(self.mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deinitialize(count: 1)
        self.mutex.deallocate()
    }

    /// Runs `body` with the lock held. Never call back into user code (delegates, handlers) from
    /// `body`: decide under the lock, act after it.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        let locked = pthread_mutex_lock(self.mutex)
        precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
        defer {
            let unlocked = pthread_mutex_unlock(self.mutex)
            precondition(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
        }
        return try body(&self.value)
    }
}
