package import Foundation

/// What a task made for an observer reports in place of delegate calls: its counters as they move and its end, with
/// the response as received (every field line) and the values courierd journals. courierd runs each attempt of a
/// background task as such a task on the same ``TaskMachine`` an app's tasks use (`BackgroundSessionRunner`), with
/// no `URLRequest`, `HTTPURLResponse` or delegate protocol between the journal and the engine.
///
/// Calls come on the session's delegate queue, one at a time, in the task's order: ``task(_:progressed:)`` as often
/// as a delegate would hear `didWriteData`, `didSendBodyData` or `didResumeAtOffset`, then ``task(_:ended:)``
/// exactly once, last.
package protocol TaskObserver: AnyObject, Sendable {
    func task(_ task: SessionTask, progressed progress: TaskProgress)
    /// Returns true when the observer took ``TaskEnd/file`` (moved or deleted it): the task then leaves the path
    /// alone; false, and the task deletes the file.
    func task(_ task: SessionTask, ended end: TaskEnd) -> Bool
}

/// How an observed task's counters moved.
package enum TaskProgress: Sendable {
    /// A download wrote body bytes: `total` of `expected` (-1: unknown), under `response`, the current exchange's
    /// response as received (nil before one arrived).
    case received(total: Int64, expected: Int64, response: IPCMessage.BackgroundResponse?)
    /// The task sent body bytes: `total` of `expected`.
    case sent(total: Int64, expected: Int64)
    /// A download made from resume data went on from `offset` of its file (0: the entity changed), under `response`.
    case resumed(offset: Int64, expectedTotal: Int64, response: IPCMessage.BackgroundResponse?)
}

/// How an observed task ended.
package struct TaskEnd: Sendable {
    /// The final response as received, the URL it came from and the last exchange's timings; nil when none arrived.
    package var response: IPCMessage.BackgroundResponse?
    /// Nil for a success.
    package var error: CourierError?
    /// A successful download's file: deleted when ``TaskObserver/task(_:ended:)`` returns, unless the observer says
    /// it took it.
    package var file: URL?
    /// The file's digest, when the engine hashed it (``DownloadTask/fileDigestAlgorithm``).
    package var fileDigest: Checksum?
    /// The response body of a successful data or upload task.
    package var body: Data?
}

extension TaskMachine {
    /// The current exchange's response as an observer hears it.
    var observedResponse: IPCMessage.BackgroundResponse? {
        finalResponse.map { response in
            IPCMessage.BackgroundResponse(
                url: response.url.absoluteString,
                head: response.head,
                metrics: hops.last?.metrics
            )
        }
    }
}
