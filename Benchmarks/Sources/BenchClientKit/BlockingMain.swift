import Foundation

/// Runs `body` on the concurrency runtime's threads while the calling (main) thread waits for it, and rethrows what
/// it threw. The clients' entry points are synchronous commands that run their async work through this rather than
/// async commands: an async `main` parks the main thread in `dispatch_main`'s `sigsuspend`, where valgrind 3.19
/// faults, and the instruction counts (`courier-bench --instructions`) run every client under valgrind.
public func runBlocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    let outcome = Outcome()
    Task {
        do {
            try await body()
            outcome.set(nil)
        } catch {
            outcome.set(error)
        }
    }
    try outcome.wait()
}

/// `@unchecked Sendable`: `error` is written once, before `done` is signalled, and read only after waiting for it.
private final class Outcome: @unchecked Sendable {
    private var error: (any Error)?
    private let done = DispatchSemaphore(value: 0)

    func set(_ error: (any Error)?) {
        self.error = error
        done.signal()
    }

    func wait() throws {
        done.wait()
        if let error {
            throw error
        }
    }
}
