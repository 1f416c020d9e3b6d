import CourierConcurrency
#if canImport(Glibc)
import Glibc
#endif
public import Testing

/// A trait for suites whose tests block their thread while they wait (semaphores, `usleep` polling, a child process's
/// end, a blocking socket read): their tests run on threads of their own instead of Swift concurrency's cooperative
/// pool, which has as many threads as the machine has cores (two here). Without it, two such tests running at once in
/// a parallel `swift test` held the whole pool, and every other test's `await` waited for them (seen as time-outs in
/// the engine tests and a starved detached task in the lifecycle's issue example).
///
/// At most three such suites per core run at once; the others wait for a slot before they start (so the
/// wait counts in no test's time limit), a test never waits for a thread once it runs, and the machine is not asked
/// to run every server, courierd and child process of the whole suite at once (with no limit, the timing tests of
/// other suites failed by the dozen on two cores).
public struct BlockingWaitsTrait: SuiteTrait, TestScoping {
    /// The scope is the suite's: its tests run in it, as child tasks (which keep the executor preference).
    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        await BlockingSuiteSlots.shared.acquire()
        defer { BlockingSuiteSlots.shared.release() }
        try await withTaskExecutorPreference(BlockingWaitsExecutor.shared) {
            try await function()
        }
    }
}

extension Trait where Self == BlockingWaitsTrait {
    /// The suite's tests block while they wait: run them off the cooperative pool (``BlockingWaitsTrait``).
    public static var blockingWaits: Self { BlockingWaitsTrait() }
}

/// How many ``BlockingWaitsTrait`` suites run at once: a slot is taken before a suite starts and given back when it
/// ends, in the order asked.
final class BlockingSuiteSlots: Sendable {
    static let shared = BlockingSuiteSlots(limit: 3 * max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    private struct Slots {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let slots: LockedValue<Slots>

    init(limit: Int) {
        slots = LockedValue(Slots(free: limit))
    }

    func acquire() async {
        await withCheckedContinuation { continuation in
            let taken = slots.withLock { slots in
                guard slots.free > 0 else {
                    slots.waiting.append(continuation)
                    return false
                }
                slots.free -= 1
                return true
            }
            if taken {
                continuation.resume()
            }
        }
    }

    func release() {
        let next = slots.withLock { slots -> CheckedContinuation<Void, Never>? in
            guard !slots.waiting.isEmpty else {
                slots.free += 1
                return nil
            }
            return slots.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// Runs each job on a thread of its own pool, which starts another thread whenever a job comes and no thread is idle,
/// so that a job never waits for another job's blocking wait to end. Dispatch's global concurrent queue, used here
/// before, grows only when its monitor (once a second) finds none of its threads runnable, up to twice the cores
/// while any is: under a parallel `swift test` on two cores, a job waited past 10 s (the lifecycle's concurrency test)
/// and a detached flush past 60 s. A thread idle for ``idleLifetime`` ends.
final class BlockingWaitsExecutor: TaskExecutor {
    static let shared = BlockingWaitsExecutor()

    /// How long a thread with nothing to run waits for a job before it ends.
    static let idleLifetime = 5.0

    private struct Pool {
        var jobs: [UnownedJob] = []
        /// Threads waiting for a job (each takes one before it ends, if one is there).
        var idle = 0
    }

    private let pool = WaitableValue(Pool())

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let needsThread = pool.withLock { pool in
            pool.jobs.append(job)
            return pool.jobs.count > pool.idle
        }
        guard needsThread else { return }
        do {
            try TestThread.start(name: "blocking-waits") { self.work() }
        } catch {
            fatalError("BlockingWaitsExecutor: pthread_create failed (\(error.code))")
        }
    }

    private func work() {
        while let job = next() {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// The next job, or nil once none came for ``idleLifetime``.
    private func next() -> UnownedJob? {
        let deadline = MonotonicDeadline(after: Self.idleLifetime)
        pool.withLock { $0.idle += 1 }
        while true {
            let waiting = pool.wait(until: { !$0.jobs.isEmpty }, deadline: deadline)
            let (job, ends) = pool.withLock { pool -> (UnownedJob?, Bool) in
                if pool.jobs.isEmpty && waiting {
                    return (nil, false)  // another thread took it: wait again
                }
                pool.idle -= 1
                return (pool.jobs.isEmpty ? nil : pool.jobs.removeFirst(), true)
            }
            if ends {
                return job
            }
        }
    }
}
