import Courier
import CourierConcurrency
import Foundation
package import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Fetches again the finished downloads a power cut damaged after their apps had acknowledged them
/// (``UnsyncedFile``): the file is fetched into courierd's staging directory, checked against the digest it was
/// handed over with, and its bytes are written back into the damaged file through courierd's own name for it. That
/// name and the app's are links to one file, so the app's copy is whole again wherever the app moved it (a copy the
/// app made to another file system is the app's). A file the server no longer sends (another digest, an error) is
/// left as it is, with its record: the next start of courierd tries again.
package final class FileRepairs: Sendable {
    private let journal: Journal
    private let flusher: FileFlusher
    private let logger: Logger
    private let session = LockedValue<Session?>(nil)

    package init(journal: Journal, flusher: FileFlusher, logger: Logger) {
        self.journal = journal
        self.flusher = flusher
        self.logger = logger
    }

    /// Repairs `files` one after another in the background, fetched into `staging`.
    func start(_ files: [UnsyncedFile], staging: URL) {
        var configuration = SessionConfiguration.ephemeral
        configuration.temporaryDirectory = staging
        configuration.engineLoopCount = 1
        let session = Session(configuration: configuration)
        self.session.withLock { $0 = session }
        Task { [self] in
            for file in files {
                await repair(file, with: session)
            }
            session.finishTasksAndInvalidate()
            self.session.withLock { $0 = nil }
        }
    }

    /// Cancels the repairs under way (courierd stops; the next start tries again).
    func stop() {
        session.withLock { $0 }?.invalidateAndCancel()
    }

    private func repair(_ file: UnsyncedFile, with session: Session) async {
        let metadata: Logger.Metadata = ["session": "\(file.session)", "task": "\(file.task)", "file": "\(file.path)"]
        do {
            let (location, response) = try await session.download(for: file.request.urlRequest)
            defer { unlink(location.path) }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200, file.holdsItsBytes(at: location.path) else {
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
