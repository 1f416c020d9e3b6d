import Courier
import Foundation
import Synchronization

/// A data delegate that counts the body bytes it is handed and lets a benchmark await each task's completion.
final class CountingDelegate: SessionDataDelegate {
    private let state = Mutex<(bytes: Int, waiting: [Int: CheckedContinuation<Void, any Error>])>((0, [:]))

    /// Resumes `task` and returns once `didCompleteWithError` was called for it.
    func run(_ task: DataTask) async throws {
        try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.waiting[task.taskIdentifier] = continuation }
            task.resume()
        }
    }

    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        state.withLock { $0.bytes += data.count }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: task.taskIdentifier) }
        if let error {
            continuation?.resume(throwing: error)
        } else {
            continuation?.resume()
        }
    }
}
