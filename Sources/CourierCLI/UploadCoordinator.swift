import Courier
import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate of a `courier put` run: sends every readable file with an upload task, follows the
/// bytes sent, and tells the main loop when something changed.
///
/// An upload succeeds only with a 2xx final response; any other status fails it (`HTTP 403 Forbidden`).
/// Redirects are not followed (a 3xx is the final response, so a failure): following one would send the request
/// again, or turn it into a GET without the file. A file that could not be read (``UploadPlan/size``) is failed
/// from the start, with no task and no report (the command prints its error line before the run).
///
/// Delegate calls arrive serially on the session's delegate queue; the main loop reads snapshots from another
/// thread, so all state lives behind one mutex. Nothing is printed from here: lines go to the main loop as
/// ``Report``s.
final class UploadCoordinator: SessionTaskDelegate, TransferCoordinator {
    private struct State {
        var transfers: [TransferProgress]
        /// taskIdentifier → plan index.
        var planOfTask: [Int: Int] = [:]
        /// plan index → its task, until it completes.
        var tasks: [Int: UploadTask] = [:]
        var interrupted = false
        var reports: [Report] = []
        var remaining: Int
        var lastEndedAt: ContinuousClock.Instant?
    }

    let plans: [UploadPlan]
    /// The request method (`PUT`, `POST`, …).
    let method: String
    /// Extra request header fields, in order (a name may repeat).
    let headers: [(name: String, value: String)]
    let startedAt: ContinuousClock.Instant
    /// `--insecure`: every server's certificate is accepted.
    let acceptsAnyServer: Bool
    private let events: AsyncStream<RunEvent>.Continuation
    private let state: LockedValue<State>

    init(
        plans: [UploadPlan],
        method: String,
        headers: [(name: String, value: String)],
        acceptsAnyServer: Bool = false,
        events: AsyncStream<RunEvent>.Continuation
    ) {
        self.acceptsAnyServer = acceptsAnyServer
        self.plans = plans
        self.method = method
        self.headers = headers
        self.events = events
        let now = ContinuousClock.now
        self.startedAt = now
        var transfers: [TransferProgress] = []
        for plan in plans {
            var transfer = TransferProgress()
            switch plan.size {
            case .success(let size):
                transfer.expected = size
            case .failure:
                transfer.phase = .failed
                transfer.endedAt = now
            }
            transfers.append(transfer)
        }
        let remaining = transfers.count { !$0.isFinished }
        self.state = LockedValue(State(transfers: transfers, remaining: remaining))
    }

    /// `--insecure` accepts any server; otherwise the session verifies it.
    func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let (disposition, credential) = RequestFlags.judge(challenge, acceptingAnyServer: acceptsAnyServer)
        completionHandler(disposition, credential)
    }

    // MARK: TransferCoordinator

    /// Creates and resumes the upload task of every readable file.
    func start(in session: Session) {
        for plan in plans {
            guard case .success = plan.size else {
                continue
            }
            let request = Self.request(for: plan, method: method, headers: headers)
            let task = session.uploadTask(with: request, fromFile: plan.fileURL)
            task.taskDescription = plan.path
            state.withLock { state in
                state.planOfTask[task.taskIdentifier] = plan.index
                state.tasks[plan.index] = task
            }
            task.resume()
        }
        events.yield(.changed)
    }

    /// The request that sends `plan`'s file: `method`, with the `--header` fields.
    static func request(for plan: UploadPlan, method: String, headers: [(name: String, value: String)]) -> URLRequest {
        var request = URLRequest(url: plan.url)
        request.httpMethod = method
        for header in headers {
            request.addValue(header.value, forHTTPHeaderField: header.name)
        }
        return request
    }

    /// Cancels every unfinished upload; they end as interrupted.
    func interruptAll() {
        let running = state.withLock { state -> [UploadTask] in
            state.interrupted = true
            return state.tasks.sorted { $0.key < $1.key }.map(\.value)
        }
        for task in running {
            task.cancel()
        }
    }

    func snapshot() -> RunSnapshot {
        state.withLock { state in
            defer { state.reports.removeAll() }
            return RunSnapshot(
                transfers: state.transfers,
                reports: state.reports,
                remaining: state.remaining,
                startedAt: startedAt,
                lastEndedAt: state.lastEndedAt
            )
        }
    }

    // MARK: SessionTaskDelegate

    func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        events.yield(.invalidated)
    }

    func urlSession(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        state.withLock { state in
            guard let index = state.planOfTask[task.taskIdentifier] else {
                return
            }
            var transfer = state.transfers[index]
            if transfer.phase == .waiting {
                transfer.phase = .running
                transfer.startedAt = .now
            }
            transfer.written = totalBytesSent
            if totalBytesExpectedToSend >= 0 {
                transfer.expected = totalBytesExpectedToSend
            }
            state.transfers[index] = transfer
        }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        let sent = task.countOfBytesSent
        let response = task.response
        let now = ContinuousClock.now
        state.withLock { state in
            guard let index = state.planOfTask.removeValue(forKey: task.taskIdentifier) else {
                return
            }
            var transfer = state.transfers[index]
            transfer.written = max(transfer.written, sent)
            transfer.endedAt = now
            if let error {
                if state.interrupted {
                    transfer.phase = .interrupted
                } else {
                    transfer.phase = .failed
                    state.reports.append(.failed(index: index, message: FailureText.describe(error)))
                }
            } else if let failure = FailureText.status(of: response) {
                transfer.phase = .failed
                state.reports.append(.failed(index: index, message: failure))
            } else {
                transfer.phase = .succeeded
                state.reports.append(.succeeded(index: index))
            }
            state.transfers[index] = transfer
            state.tasks[index] = nil
            state.remaining -= 1
            state.lastEndedAt = now
        }
        events.yield(.changed)
    }
}
