import Dispatch
public import Testing

/// A trait for suites whose tests block their thread while they wait (semaphores, `usleep` polling, a child process's
/// end, a blocking socket read): their tests run on threads of their own instead of Swift concurrency's cooperative
/// pool, which has as many threads as the machine has cores (two here). Without it, two such tests running at once in
/// a parallel `swift test` held the whole pool, and every other test's `await` waited for them (seen as time-outs in
/// the engine tests and a starved detached task in the lifecycle's issue example).
public struct BlockingWaitsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(BlockingWaitsExecutor.shared) {
            try await function()
        }
    }
}

extension Trait where Self == BlockingWaitsTrait {
    /// The suite's tests block while they wait: run them off the cooperative pool (``BlockingWaitsTrait``).
    public static var blockingWaits: Self { BlockingWaitsTrait() }
}

/// Runs each job on Dispatch's global concurrent queue, whose thread pool grows when its threads block (unlike the
/// cooperative pool).
final class BlockingWaitsExecutor: TaskExecutor {
    static let shared = BlockingWaitsExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue.global().async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
