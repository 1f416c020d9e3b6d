import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Flushes the finished downloads courierd handed over unflushed (``UnsyncedFile``) in batches, on a queue of its
/// own, so that no transfer and no app waits for the disk: one `syncfs` of the downloads directory's file system per
/// batch (every file of the batch at once; `fsync` of each when `syncfs` fails), then one journal transaction that
/// forgets the batch's records, then the files the apps have acknowledged meanwhile are deleted.
///
/// A batch starts ``delay`` after the first file of it was queued; files queued while a batch is flushed make the
/// next one. ``drain()`` (courierd's clean stop) flushes what is queued before it returns.
package final class FileFlusher: Sendable {
    private struct State {
        var queued: [String] = []
        var scheduled = false
    }

    private let journal: Journal
    private let directory: URL
    private let delay: TimeInterval
    private let logger: Logger
    private let queue = DispatchQueue(label: "courierd.file-flusher")
    private let state = LockedValue(State())

    /// Flushes files under `directory` (courierd's downloads directory), `delay` seconds after a batch's first file.
    package init(journal: Journal, directory: URL, delay: TimeInterval, logger: Logger) {
        self.journal = journal
        self.directory = directory
        self.delay = delay
        self.logger = logger
    }

    /// Queues `path` (recorded in the journal as unflushed) for the next batch.
    package func enqueue(_ path: String) {
        let schedule = state.withLock { state -> Bool in
            state.queued.append(path)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule {
            queue.asyncAfter(deadline: .now() + delay) { [self] in
                self.flushBatch()
            }
        }
    }

    /// Flushes every file queued so far, on the caller's thread once the queue is free.
    package func drain() {
        queue.sync {
            flushBatch()
        }
    }

    /// How many files wait for a batch.
    package var queuedCount: Int {
        state.withLock { $0.queued.count }
    }

    private func flushBatch() {
        let batch = state.withLock { state -> [String] in
            defer {
                state.queued = []
                state.scheduled = false
            }
            return state.queued
        }
        guard !batch.isEmpty else {
            return
        }
        // Their names were flushed when they were handed over.
        let flushed = syncFileSystem() ? batch : batch.filter { DurableFile.sync($0) != nil }
        if flushed.count < batch.count {
            logger.error(
                "finished downloads not flushed; they are checked against their digests after a reboot",
                metadata: ["files": "\(batch.count - flushed.count)"]
            )
        }
        do {
            let deletable = try journal.flushed(flushed)
            journal.sync()
            for path in deletable {
                unlink(path)
            }
        } catch {
            logger.error("flushed downloads not journaled", metadata: ["error": "\(error)"])
        }
    }

    /// `syncfs` of the file system that holds ``directory``: whether it succeeded. (glibc declares `syncfs` only under
    /// `_GNU_SOURCE`, which Swift's Glibc module does not define: it is looked up by name.)
    private func syncFileSystem() -> Bool {
        guard let symbol = dlsym(nil, "syncfs") else {
            return false
        }
        let syncfs = unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return false
        }
        defer { close(descriptor) }
        return syncfs(descriptor) == 0
    }
}
