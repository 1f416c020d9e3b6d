import CourierConcurrency

/// A one-shot result that may be produced before or after someone waits for it.
///
/// The continuation is an unsafe one: the state below resumes it exactly once (whoever takes it out of `.waiting`
/// under the lock resumes it; a second result or a second wait finds `.consumed`), the check a checked continuation
/// would repeat at the cost of an allocation per call (every async data, download and upload call waits here).
final class ContinuationBox<Value: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(UnsafeContinuation<Value, any Error>)
        case done(Result<Value, any Error>)
        case consumed
    }

    private let state = LockedValue(State.idle)

    func resume(returning value: Value) {
        complete(.success(value))
    }

    func resume(throwing error: any Error) {
        complete(.failure(error))
    }

    private func complete(_ result: Result<Value, any Error>) {
        let waiter = state.withLock { state -> UnsafeContinuation<Value, any Error>? in
            switch state {
            case .idle:
                state = .done(result)
                return nil
            case .waiting(let continuation):
                state = .consumed
                return continuation
            case .done, .consumed:
                return nil
            }
        }
        waiter?.resume(with: result)
    }

    /// Runs `start`, then waits for the result.
    func wait(after start: () -> Void) async throws -> Value {
        start()
        return try await withUnsafeThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<Value, any Error>? in
                switch state {
                case .idle:
                    state = .waiting(continuation)
                    return nil
                case .done(let result):
                    state = .consumed
                    return result
                case .waiting, .consumed:
                    return .failure(CourierError(.unknown, "the result was already consumed"))
                }
            }
            if let ready {
                continuation.resume(with: ready)
            }
        }
    }
}
