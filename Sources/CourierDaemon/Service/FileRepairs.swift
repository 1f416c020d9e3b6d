import Courier
import CourierConcurrency
import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Fetches again the finished downloads a power cut damaged after their apps had acknowledged them
/// (``UnsyncedFile``): the file is fetched into courierd's staging directory, checked against the digest it was
/// handed over with, and its bytes are written back into the damaged file through courierd's own name for it. That
/// name and the app's are links to one file, so the app's copy is whole again wherever the app moved it (a copy the
/// app made to another file system is the app's). A file the server no longer sends (another digest, an error) is
/// left as it is, with its record: the next start of courierd tries again.
///
/// Each is fetched as its task's attempts were: from the task's journaled spec (``Journal/taskSpec(session:task:)``:
/// its header lines in order, its credentials, ``IPCMessage/BackgroundTask/attemptRequest``) on its session's own
/// `Session` (the runner's: the app's trusted certificates, headers and timeouts), or, when that session is gone, on a
/// plain one of this object's.
package final class FileRepairs: Sendable {
    private struct State {
        /// The plain session, made for the first file whose session is gone.
        var fallback: Session?
        var stopped = false
    }

    private let journal: Journal
    private let logger: Logger
    private let state = LockedValue(State())

    package init(journal: Journal, logger: Logger) {
        self.journal = journal
        self.logger = logger
    }

    /// Repairs `files` one after another in the background, each on `session(file.session)` when it returns one.
    func start(_ files: [UnsyncedFile], staging: URL, session: @escaping @Sendable (String) -> Session?) {
        Task { [self] in
            for file in files {
                guard let fetching = session(file.session) ?? fallback(staging: staging) else {
                    break
                }
                await repair(file, on: fetching)
            }
            state.withLock { state in
                defer { state.fallback = nil }
                return state.fallback
            }?.finishTasksAndInvalidate()
        }
    }

    /// Cancels the repairs under way on the plain session, and makes no other start (courierd stops, and so do the
    /// sessions' runners; the next start tries again).
    func stop() {
        state.withLock { state in
            state.stopped = true
            return state.fallback
        }?.invalidateAndCancel()
    }

    private func fallback(staging: URL) -> Session? {
        state.withLock { state in
            guard !state.stopped else {
                return nil
            }
            if let session = state.fallback {
                return session
            }
            var configuration = SessionConfiguration.ephemeral
            configuration.temporaryDirectory = staging
            configuration.engineLoopCount = 1
            let session = Session(configuration: configuration)
            state.fallback = session
            return session
        }
    }

    private func repair(_ file: UnsyncedFile, on session: Session) async {
        let metadata: Logger.Metadata = ["session": "\(file.session)", "task": "\(file.task)", "file": "\(file.path)"]
        let spec: IPCMessage.BackgroundTask
        do {
            guard let journaled = try journal.taskSpec(session: file.session, task: file.task) else {
                logger.error(
                    "a file an app was handed was damaged by a power cut; its task is no longer journaled",
                    metadata: metadata
                )
                return
            }
            spec = journaled
        } catch {
            logger.error(
                "a file an app was handed was damaged by a power cut; its task was not read from the journal",
                metadata: metadata.merging(["error": "\(error)"]) { $1 }
            )
            return
        }
        await withCheckedContinuation { (fetched: CheckedContinuation<Void, Never>) in
            let observer = FetchEnd { [self] end in
                mend(file, with: end, metadata: metadata)
                fetched.resume()
            }
            session.observedDownload(spec.attemptRequest, template: spec.spec, observer: observer).resume()
        }
    }

    /// Writes the fetched file's bytes into the damaged one when they are the bytes it was handed over with; called
    /// before the fetched file is deleted.
    private func mend(_ file: UnsyncedFile, with end: TaskEnd, metadata: Logger.Metadata) {
        do {
            if let error = end.error {
                throw error
            }
            let status = end.response?.head.status ?? 0
            guard status == 200, let location = end.file, file.holdsItsBytes(at: location.path) else {
                logger.error(
                    "a file an app was handed was damaged by a power cut; the server now sends other bytes",
                    metadata: metadata.merging(["status": "\(status)"]) { $1 }
                )
                return
            }
            try Self.overwrite(file.path, with: location.path)
            let deletable = try journal.flushed([file.path])
            journal.sync()
            for path in deletable {
                unlink(path)
            }
            logger.notice(
                "a file an app was handed, damaged by a power cut, fetched again in place",
                metadata: metadata
            )
        } catch {
            logger.error(
                "a file an app was handed was damaged by a power cut and could not be fetched again",
                metadata: metadata.merging(["error": "\(error)"]) { $1 }
            )
        }
    }

    /// Writes `source`'s bytes over the file at `path` (the same file, not a new one: every link to it sees them) and
    /// flushes it.
    private static func overwrite(_ path: String, with source: String) throws {
        guard let bytes = FileManager.default.contents(atPath: source),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            throw POSIXError(.EIO)
        }
        defer { try? handle.close() }
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: bytes)
        try handle.synchronize()
    }
}

/// Hears the end of a repair's fetch (``TaskObserver``): `ended` runs once, on the session's delegate queue, while the
/// fetched file is still there.
private final class FetchEnd: TaskObserver {
    private let ended: @Sendable (TaskEnd) -> Void

    init(_ ended: @escaping @Sendable (TaskEnd) -> Void) {
        self.ended = ended
    }

    func task(_ task: SessionTask, progressed progress: TaskProgress) {}

    func task(_ task: SessionTask, ended end: TaskEnd) -> Bool {
        ended(end)
        return false
    }
}
