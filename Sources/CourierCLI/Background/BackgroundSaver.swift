import Courier
import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of the tool's background session (``BackgroundTransfers``): saves each finished download at the
/// path its task's description holds and prints one line per transfer that ends (`saved PATH`, `uploaded FILE ->
/// URL`, or `error: …`). Used by the command that hands transfers over (events of earlier transfers can reach it
/// while it holds the session) and by the instance courierd launches in the background.
///
/// A download is saved only with a 2xx final response. A file is never replaced: when something already has the
/// destination's name, the file gets the next free `NAME-N` name, unless that something is this very file, saved
/// by an instance that died before courierd heard it had (courierd then delivers the download again).
///
/// Delegate calls arrive serially on the session's delegate queue; `finished` is read by the application from the
/// same queue only.
final class BackgroundSaver: SessionDownloadDelegate, SessionDataDelegate, Sendable {
    private struct State {
        /// The application's handler for the events of the relaunch, until they have all arrived.
        var completion: (@Sendable () -> Void)?
        /// Whether the events courierd kept while no instance held the session have all arrived.
        var replayOver = false
        /// What `didFinishDownloadingTo` decided for a task, printed when it completes.
        var saved: [Int: Result<String, FileSystem.Failure>] = [:]
        /// Whether `whenIdle` was called.
        var saidIdle = false
        /// How each task that ended while this instance held the session ended (true: saved or uploaded), for a
        /// command that waits for its transfers (`--wait`).
        var ended: [Int: Bool] = [:]
        /// The tasks such a command waits for, and how to wake it when the last one has ended.
        var awaited: Set<Int> = []
        var allEnded: CheckedContinuation<Void, Never>?
    }

    private let state = LockedValue(State())
    /// Called once the replay is over and no transfer of the session is left (in the relaunched instance only).
    private let whenIdle: (@Sendable () -> Void)?

    init(whenIdle: (@Sendable () -> Void)? = nil) {
        self.whenIdle = whenIdle
    }

    /// The relaunched instance's completion handler for the replay.
    func awaitReplay(completion: @escaping @Sendable () -> Void) {
        state.withLock { $0.completion = completion }
    }

    // MARK: SessionDownloadDelegate

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        let outcome: Result<String, FileSystem.Failure>
        if let failure = FailureText.status(of: downloadTask.response) {
            outcome = .failure(FileSystem.Failure(description: failure))
        } else if let path = downloadTask.taskDescription, path.hasPrefix("/") {
            outcome = Self.save(location, at: URL(fileURLWithPath: path))
        } else {
            outcome = .failure(FileSystem.Failure(description: "the task says nowhere to save it"))
        }
        state.withLock { $0.saved[downloadTask.taskIdentifier] = outcome }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        let saved = state.withLock { $0.saved.removeValue(forKey: task.taskIdentifier) }
        let url = task.originalRequest?.url?.absoluteString ?? "?"
        let subject = task is UploadTask ? "\(task.taskDescription ?? "?") -> \(url)" : url
        // The file saved (nil for an upload), or why the transfer failed.
        let ended: Result<String?, FileSystem.Failure>
        if let error {
            ended = .failure(FileSystem.Failure(description: FailureText.describe(error)))
        } else if let failure = FailureText.status(of: task.response) {
            ended = .failure(FileSystem.Failure(description: failure))
        } else if task is UploadTask {
            ended = .success(nil)
        } else {
            ended = saved.map { $0.map { $0 } }
                ?? .failure(FileSystem.Failure(description: "the download ended without a file"))
        }
        var failure: String?
        switch ended {
        case .success(let path?): Self.say("saved \(path) (\(url))")
        case .success(nil): Self.say("uploaded \(subject)")
        case .failure(let reason):
            failure = reason.description
            Self.say("error: \(subject): \(reason.description)")
        }
        if let command = CompletionHook.take(for: task.taskIdentifier) {
            let outcome = CompletionHook.Outcome(
                file: try? ended.get(),
                url: url,
                error: failure,
                httpStatus: (task.response as? HTTPURLResponse)?.statusCode
            )
            CompletionHook.run(command, for: outcome)
        }
        let wake = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.ended[task.taskIdentifier] = failure == nil
            guard state.allEnded != nil, state.awaited.isSubset(of: state.ended.keys) else {
                return nil
            }
            defer { state.allEnded = nil }
            return state.allEnded
        }
        wake?.resume()
        finishIfIdle(session, ending: task)
    }

    /// Waits until every task of `tasks` has ended (each said on standard output as it ends); returns whether every
    /// one was saved or uploaded. For a command that hands transfers over and waits for them (`--wait`).
    func waitForEnd(of tasks: Set<Int>) async -> Bool {
        await withCheckedContinuation { continuation in
            let endedAlready = state.withLock { state -> Bool in
                state.awaited = tasks
                guard tasks.isSubset(of: state.ended.keys) else {
                    state.allEnded = continuation
                    return false
                }
                return true
            }
            if endedAlready {
                continuation.resume()
            }
        }
        return state.withLock { state in tasks.allSatisfy { state.ended[$0] == true } }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
        state.withLock { $0.replayOver = true }
        finishIfIdle(session, ending: nil)
    }

    /// Once the replay is over: hands the completion back, and when no transfer is left, says so (the relaunched
    /// instance then terminates rather than stay suspended with nothing to wait for).
    private func finishIfIdle(_ session: Session, ending task: SessionTask?) {
        let idle = session.allTasks.allSatisfy { $0 === task }
        let (completion, callsWhenIdle) = state.withLock { state -> ((@Sendable () -> Void)?, Bool) in
            guard state.replayOver else {
                return (nil, false)
            }
            defer { state.completion = nil }
            let callsWhenIdle = idle && !state.saidIdle
            state.saidIdle = state.saidIdle || idle
            return (state.completion, callsWhenIdle)
        }
        if callsWhenIdle {
            whenIdle?()
        }
        completion?()
    }

    // MARK: Saving

    /// Moves the download at `location` to `destination`, or to the first free `NAME-N` beside it. Returns the path
    /// it was saved at.
    static func save(_ location: URL, at destination: URL) -> Result<String, FileSystem.Failure> {
        let directory = destination.deletingLastPathComponent()
        let name = destination.lastPathComponent
        do throws(FileSystem.Failure) {
            try FileSystem.makeDirectory(directory)
            FileSystem.applyDefaultPermissions(location)
            var candidate = destination
            var number = 0
            while true {
                if FileSystem.isSameFile(candidate, location) {
                    FileSystem.removeIfPresent(location)  // Saved already, by an instance courierd did not hear from.
                    return .success(candidate.path)
                }
                if try FileSystem.moveWithoutReplacing(location, to: candidate) {
                    return .success(candidate.path)
                }
                number += 1
                candidate = directory.appendingPathComponent(FileNaming.name(name, withSuffix: number))
            }
        } catch {
            return .failure(error)
        }
    }

    /// One line on standard output, written at once (the relaunched instance's output is courierd's per-app log).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
