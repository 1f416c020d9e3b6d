#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value protected by a `pthread_mutex_t`, in the manner of `NIOLockedValueBox`. Every module of the
/// package (and its tests) locks with this type. Copies share one lock and one value (a reference).
///
/// Why not `Synchronization.Mutex`: on Linux its lock is a futex driven from the uninstrumented
/// standard library, so ThreadSanitizer cannot see it and reports every access it protects as a
/// race. pthread mutexes are intercepted by ThreadSanitizer, which keeps `--sanitize=thread` runs
/// meaningful.
///
/// `@unchecked Sendable`: the value is only read or written in ``withLock(_:)``, with the mutex held; the mutex
/// lives in the storage object, is never moved, and is destroyed only in its `deinit`, when no other reference
/// exists. `Value` is `Sendable`, so nothing taken out of the lock is unsafe to use elsewhere. (The storage is a
/// `ManagedBuffer`, which the standard library marks as never `Sendable`, so the conformance cannot be checked.)
package struct LockedValue<Value: Sendable>: @unchecked Sendable {
    private let storage: Storage

    package init(_ value: Value) {
        storage = Storage.make(value)
    }

    /// Runs `body` with the lock held. Never call back into user code (delegates, handlers) from
    /// `body`: decide under the lock, act after it.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock(body)
    }

    /// The value and its mutex in one allocation (the value as the header, the mutex as the one element),
    /// as NIO's `LockStorage`: a task's state costs one `malloc`, not two.
    private final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        static func make(_ value: Value) -> Storage {
            let storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in value }, to: Storage.self)
            storage.withUnsafeMutablePointerToElements { mutex in
                mutex.initialize(to: pthread_mutex_t())
                let result = pthread_mutex_init(mutex, nil)
                precondition(result == 0, "pthread_mutex_init failed: \(result)")
            }
            return storage
        }

        deinit {
            // The header (the value) is destroyed by ManagedBuffer; the element is ours.
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }

        func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
            try withUnsafeMutablePointers { value, mutex in
                let locked = pthread_mutex_lock(mutex)
                precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
                defer {
                    let unlocked = pthread_mutex_unlock(mutex)
                    precondition(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
                }
                return try body(&value.pointee)
            }
        }
    }
}
