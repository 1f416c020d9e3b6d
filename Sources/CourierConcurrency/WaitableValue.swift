#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value protected by a `pthread_mutex_t`, like ``LockedValue``, that a thread can wait on until it holds what the
/// thread needs: every change made in ``withLock(_:)`` wakes the waiters (`pthread_cond_broadcast`), each of which
/// looks at its condition again. Where a thread must wait for other threads to change something (a set of attempts
/// to empty, an answer to come), it waits here instead of sleeping and looking again.
///
/// Waiting blocks the thread: never from a Swift concurrency task (mark the caller `noasync`), never on a thread that
/// the change it waits for needs.
///
/// `@unchecked Sendable`: as ``LockedValue``: the value is only touched with the mutex held; the mutex and the
/// condition live in the storage object, are never moved, and are destroyed only in its `deinit`.
package struct WaitableValue<Value: Sendable>: @unchecked Sendable {
    private let storage: Storage

    package init(_ value: Value) {
        storage = Storage.make(value)
    }

    /// Runs `body` with the lock held, then wakes every waiter. Never call back into user code from `body`.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock(body)
    }

    /// Blocks until `condition` holds for the value, or until `deadline` (nil: no limit); returns whether it holds.
    /// `condition` runs with the lock held, each time the value changed.
    @discardableResult
    package func wait(until condition: (Value) -> Bool, deadline: MonotonicDeadline? = nil) -> Bool {
        storage.wait(until: condition, deadline: deadline?.time)
    }

    /// Blocks until `condition` holds or `seconds` have passed; whether it holds.
    @discardableResult
    package func wait(atMost seconds: Double, until condition: (Value) -> Bool) -> Bool {
        storage.wait(until: condition, deadline: MonotonicDeadline(after: seconds).time)
    }

    private struct Primitives {
        var mutex = pthread_mutex_t()
        var condition = pthread_cond_t()
    }

    private final class Storage: ManagedBuffer<Value, Primitives> {
        static func make(_ value: Value) -> Storage {
            let storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in value }, to: Storage.self)
            storage.withUnsafeMutablePointerToElements { primitives in
                primitives.initialize(to: Primitives())
                let mutex = pthread_mutex_init(&primitives.pointee.mutex, nil)
                precondition(mutex == 0, "pthread_mutex_init failed: \(mutex)")
                var attributes = pthread_condattr_t()
                pthread_condattr_init(&attributes)
                pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
                let condition = pthread_cond_init(&primitives.pointee.condition, &attributes)
                pthread_condattr_destroy(&attributes)
                precondition(condition == 0, "pthread_cond_init failed: \(condition)")
            }
            return storage
        }

        deinit {
            withUnsafeMutablePointerToElements { primitives in
                pthread_cond_destroy(&primitives.pointee.condition)
                pthread_mutex_destroy(&primitives.pointee.mutex)
                primitives.deinitialize(count: 1)
            }
        }

        func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
            try withUnsafeMutablePointers { value, primitives in
                let locked = pthread_mutex_lock(&primitives.pointee.mutex)
                precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
                defer {
                    pthread_cond_broadcast(&primitives.pointee.condition)
                    let unlocked = pthread_mutex_unlock(&primitives.pointee.mutex)
                    precondition(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
                }
                return try body(&value.pointee)
            }
        }

        func wait(until condition: (Value) -> Bool, deadline: timespec?) -> Bool {
            withUnsafeMutablePointers { value, primitives in
                let locked = pthread_mutex_lock(&primitives.pointee.mutex)
                precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
                defer {
                    let unlocked = pthread_mutex_unlock(&primitives.pointee.mutex)
                    precondition(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
                }
                while !condition(value.pointee) {
                    if var deadline {
                        if pthread_cond_timedwait(&primitives.pointee.condition, &primitives.pointee.mutex, &deadline)
                            == ETIMEDOUT
                        {
                            return condition(value.pointee)
                        }
                    } else {
                        pthread_cond_wait(&primitives.pointee.condition, &primitives.pointee.mutex)
                    }
                }
                return true
            }
        }
    }
}

/// A moment on `CLOCK_MONOTONIC` (which the wall clock's changes do not move), for
/// ``WaitableValue/wait(until:deadline:)`` calls that share one deadline.
package struct MonotonicDeadline: Sendable {
    let time: timespec

    /// `seconds` from now.
    package init(after seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let span = max(seconds, 0)
        let whole = Int(span.rounded(.down))
        var nanoseconds = Int(now.tv_nsec) + Int((span - Double(whole)) * 1e9)
        var secondsPart = Int(now.tv_sec) + whole
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            secondsPart += 1
        }
        time = timespec(tv_sec: secondsPart, tv_nsec: nanoseconds)
    }

    /// The seconds left until this moment; 0 once it has passed.
    package var remaining: Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return max(0, Double(time.tv_sec - now.tv_sec) + Double(time.tv_nsec - now.tv_nsec) / 1e9)
    }
}
