import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

/// Counts delegate calls that overlap in time.
final class OverlapDelegate: SessionDataDelegate, Sendable {
    let inside = LockedValue(0)
    let overlaps = LockedValue(0)
    let completions = EventLog<Int>()

    private func enter() {
        let concurrent = inside.withLock { inside in
            inside += 1
            return inside
        }
        if concurrent > 1 {
            overlaps.withLock { $0 += 1 }
        }
        // Widen the window a little so that overlapping calls would be seen.
        usleep(200)
    }

    private func leave() {
        inside.withLock { $0 -= 1 }
    }

    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        enter()
        leave()
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        enter()
        completions.append(task.taskIdentifier)
        leave()
    }
}

@Suite("Delegate queue", .blockingWaits, .timeLimit(.minutes(1)))
struct DelegateQueueTests {
    @Test("calls are serial even on a concurrent OperationQueue")
    func serialOnConcurrentQueue() async throws {
        try await withServer { server in
            let delegate = OverlapDelegate()
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 8
            let session = Session(configuration: testConfiguration(), delegate: delegate, delegateQueue: queue)
            defer { session.invalidateAndCancel() }
            let tasks = (0..<40).map { session.dataTask(with: server.url("/bytes/50000?seed=\($0)")) }
            tasks.forEach { $0.resume() }
            let completed = try await delegate.completions.wait { $0.count == 40 }
            #expect(Set(completed).count == 40)
            #expect(delegate.overlaps.withLock { $0 } == 0)
        }
    }
}
