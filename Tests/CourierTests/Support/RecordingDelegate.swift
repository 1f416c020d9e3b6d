import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a delegate saw, in order.
enum DelegateEvent: Sendable, CustomStringConvertible {
    case response(task: Int, status: Int)
    case data(task: Int, bytes: Data)
    case wrote(task: Int, delta: Int64, total: Int64, expected: Int64)
    case sent(task: Int, delta: Int64, total: Int64, expected: Int64)
    case resumed(task: Int, offset: Int64, expected: Int64)
    case finished(task: Int, path: String, bytes: Data?, existedAfterReturn: Bool?)
    case redirect(task: Int, status: Int, to: String)
    case challenge(task: Int, method: String, previousFailures: Int)
    case becameDownload(task: Int, download: Int)
    case willCache(task: Int, bytes: Int)
    case metrics(task: Int, metrics: SessionTaskMetrics)
    case completed(task: Int, error: CourierError?)
    case invalid
    case notOnDelegateQueue(String)

    var task: Int? {
        switch self {
        case .response(let task, _), .data(let task, _), .wrote(let task, _, _, _), .sent(let task, _, _, _),
            .resumed(let task, _, _), .finished(let task, _, _, _), .redirect(let task, _, _),
            .challenge(let task, _, _), .becameDownload(let task, _), .metrics(let task, _), .willCache(let task, _),
            .completed(let task, _):
            return task
        case .invalid, .notOnDelegateQueue:
            return nil
        }
    }

    var description: String {
        switch self {
        case .response(let task, let status): "response(\(task), \(status))"
        case .data(let task, let bytes): "data(\(task), \(bytes.count))"
        case .wrote(let task, let delta, let total, let expected): "wrote(\(task), +\(delta)=\(total)/\(expected))"
        case .sent(let task, let delta, let total, let expected): "sent(\(task), +\(delta)=\(total)/\(expected))"
        case .resumed(let task, let offset, let expected): "resumed(\(task), \(offset), \(expected))"
        case .finished(let task, _, let bytes, _): "finished(\(task), \(bytes?.count ?? -1))"
        case .redirect(let task, let status, let to): "redirect(\(task), \(status), \(to))"
        case .challenge(let task, let method, let failures): "challenge(\(task), \(method), \(failures))"
        case .becameDownload(let task, let download): "becameDownload(\(task), \(download))"
        case .willCache(let task, let bytes): "willCache(\(task), \(bytes))"
        case .metrics(let task, let metrics): "metrics(\(task), \(metrics.transactionMetrics.count))"
        case .completed(let task, let error): "completed(\(task), \(error.map { "\($0.code)" } ?? "nil"))"
        case .invalid: "invalid"
        case .notOnDelegateQueue(let what): "notOnDelegateQueue(\(what))"
        }
    }
}

/// A delegate for every kind of task that records what it sees and lets tests script answers.
final class RecordingDelegate: SessionDataDelegate, SessionDownloadDelegate, Sendable {
    let log = EventLog<DelegateEvent>()
    private let queueSlot = LockedValue<OperationQueue?>(nil)
    private let scripts = LockedValue(Scripts())

    struct Scripts {
        var redirect: (@Sendable (HTTPURLResponse, URLRequest) -> URLRequest?)?
        var challenge: (@Sendable (URLAuthenticationChallenge) -> (Session.AuthChallengeDisposition, URLCredential?))?
        var disposition: (@Sendable (URLResponse) -> Session.ResponseDisposition)?
        var readDownloadedFile = true
        var onData: (@Sendable (DataTask, Data) -> Void)?
        var willCache: (@Sendable (CachedURLResponse) -> CachedURLResponse?)?
    }

    init() {}

    /// The queue delegate calls must arrive on (checked on every call).
    func expectQueue(_ queue: OperationQueue) {
        queueSlot.withLock { $0 = queue }
    }

    func script(_ change: (inout Scripts) -> Void) {
        scripts.withLock { change(&$0) }
    }

    private func check(_ what: String) {
        if let queue = queueSlot.withLock({ $0 }), OperationQueue.current !== queue {
            log.append(.notOnDelegateQueue(what))
        }
    }

    /// Waits for the completion of `task` and returns its error.
    @discardableResult
    func completion(of task: SessionTask, timeout: Duration = .seconds(30)) async throws -> CourierError? {
        let id = task.taskIdentifier
        let events = try await log.wait(timeout: timeout, "completion of task \(id)") { events in
            events.contains { if case .completed(id, _) = $0 { return true } else { return false } }
        }
        for event in events {
            if case .completed(id, let error) = event {
                return error
            }
        }
        return nil
    }

    func events(of task: SessionTask) -> [DelegateEvent] {
        log.events.filter { $0.task == task.taskIdentifier }
    }

    /// The contents of every file `didFinishDownloadingTo` handed over for `task` (nil where it was not read).
    func downloadedFiles(of task: SessionTask) -> [Data?] {
        events(of: task).compactMap { event -> Data?? in
            if case .finished(_, _, let bytes, _) = event { return .some(bytes) }
            return nil
        }
    }

    /// The metrics delivered for `task` (once, when the task completes).
    func metrics(of task: SessionTask) -> [SessionTaskMetrics] {
        events(of: task).compactMap { event -> SessionTaskMetrics? in
            if case .metrics(_, let metrics) = event { return metrics }
            return nil
        }
    }

    func body(of task: SessionTask) -> Data {
        var body = Data()
        for case .data(task.taskIdentifier, let bytes) in log.events {
            body.append(bytes)
        }
        return body
    }

    // MARK: Delegate methods

    func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        check("invalid")
        log.append(.invalid)
    }

    func urlSession(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        check("redirect")
        log.append(
            .redirect(task: task.taskIdentifier, status: response.statusCode, to: request.url?.absoluteString ?? "")
        )
        if let script = scripts.withLock({ $0.redirect }) {
            completionHandler(script(response, request))
        } else {
            completionHandler(request)
        }
    }

    /// Server-trust challenges (the HTTP/2 pass's TLS servers) are judged by default here, unrecorded: the tests
    /// that study them have delegates of their own (ServerTrustTests).
    func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }

    func urlSession(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        check("challenge")
        log.append(
            .challenge(
                task: task.taskIdentifier,
                method: challenge.protectionSpace.authenticationMethod,
                previousFailures: challenge.previousFailureCount
            )
        )
        if let script = scripts.withLock({ $0.challenge }) {
            let (disposition, credential) = script(challenge)
            completionHandler(disposition, credential)
        } else {
            completionHandler(.performDefaultHandling, nil)
        }
    }

    func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        check("sent")
        log.append(
            .sent(
                task: task.taskIdentifier,
                delta: bytesSent,
                total: totalBytesSent,
                expected: totalBytesExpectedToSend
            )
        )
    }

    func urlSession(_ session: Session, task: SessionTask, didFinishCollecting metrics: SessionTaskMetrics) {
        check("metrics")
        log.append(.metrics(task: task.taskIdentifier, metrics: metrics))
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        check("completed")
        log.append(
            .completed(
                task: task.taskIdentifier,
                error: error.map { $0 as? CourierError ?? CourierError(.unknown, "\($0)") }
            )
        )
    }

    func urlSession(
        _ session: Session,
        dataTask: DataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (Session.ResponseDisposition) -> Void
    ) {
        check("response")
        log.append(.response(task: dataTask.taskIdentifier, status: (response as? HTTPURLResponse)?.statusCode ?? 0))
        let disposition = scripts.withLock { $0.disposition }?(response) ?? .allow
        completionHandler(disposition)
    }

    func urlSession(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) {
        check("becameDownload")
        log.append(.becameDownload(task: dataTask.taskIdentifier, download: downloadTask.taskIdentifier))
    }

    func urlSession(
        _ session: Session,
        dataTask: DataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        check("willCache")
        log.append(.willCache(task: dataTask.taskIdentifier, bytes: proposedResponse.data.count))
        completionHandler(scripts.withLock { $0.willCache }.map { $0(proposedResponse) } ?? proposedResponse)
    }

    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        check("data")
        log.append(.data(task: dataTask.taskIdentifier, bytes: data))
        scripts.withLock { $0.onData }?(dataTask, data)
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        check("finished")
        let read = scripts.withLock { $0.readDownloadedFile }
        let bytes = read ? try? fileContents(location) : nil
        // Record whether the file still exists "after return" by checking on the next delegate call: see
        // `stagingFileGone` in the tests. Here we only record the path.
        log.append(
            .finished(task: downloadTask.taskIdentifier, path: location.path, bytes: bytes, existedAfterReturn: nil)
        )
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        check("wrote")
        log.append(
            .wrote(
                task: downloadTask.taskIdentifier,
                delta: bytesWritten,
                total: totalBytesWritten,
                expected: totalBytesExpectedToWrite
            )
        )
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        check("resumed")
        log.append(.resumed(task: downloadTask.taskIdentifier, offset: fileOffset, expected: expectedTotalBytes))
    }
}
