import CourierConcurrency
import Foundation

/// Runs delegate work for one session serially on its delegate queue, in submission order.
///
/// Each engine batch becomes one work list. A list is appended to a FIFO, and an operation is added to the queue
/// only when none is scheduled; that operation drains the FIFO. So there is at most one operation per batch,
/// calls never overlap even on a concurrent `OperationQueue`, and their order is the order of submission.
final class DelegateDispatcher: Sendable {
    private struct State {
        var pending: [[DelegateWork.Item]] = []
        var scheduled = false
    }

    let queue: OperationQueue
    private let state = LockedValue(State())
    private let session: @Sendable () -> Session?

    init(queue: OperationQueue, session: @escaping @Sendable () -> Session?) {
        self.queue = queue
        self.session = session
    }

    func enqueue(_ work: DelegateWork) {
        guard !work.isEmpty else {
            return
        }
        let schedule = state.withLock { state -> Bool in
            state.pending.append(work.items)
            if state.scheduled {
                return false
            }
            state.scheduled = true
            return true
        }
        if schedule {
            queue.addOperation { [self] in
                drain()
            }
        }
    }

    private func drain() {
        let session = self.session()
        while true {
            let lists = state.withLock { state -> [[DelegateWork.Item]]? in
                if state.pending.isEmpty {
                    state.scheduled = false
                    return nil
                }
                defer { state.pending.removeAll(keepingCapacity: true) }
                return state.pending
            }
            guard let lists else {
                return
            }
            for list in lists {
                for item in list {
                    item(session)
                }
            }
        }
    }
}
