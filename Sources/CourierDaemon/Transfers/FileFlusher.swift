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
/// A flush is kept out of the transfers' way: a batch is flushed ``delay`` after a file is queued while no transfer
/// runs (`transfersRunning`), or ``patience`` after one is queued while transfers run, whichever comes first. (A
/// `syncfs` while downloads write holds them up: 200 downloads of 8 MiB ended after 3.7-4.3 s with a flush every
/// 0.25 s, after 2.4-2.6 s with none until they had ended.) Files queued while a batch is flushed make the next one.
/// ``drain()`` (courierd's clean stop) flushes what is queued before it returns.
package final class FileFlusher: Sendable {
    private struct State {
        var queued: [String] = []
        /// Counts the batches flushed: a flush scheduled for an earlier batch does nothing.
        var batch = 0
        /// When the queued batch's flush is scheduled.
        var due: DispatchTime?
    }

    private let journal: Journal
    private let directory: URL
    private let delay: TimeInterval
    private let patience: TimeInterval
    private let transfersRunning: @Sendable () -> Bool
    private let logger: Logger
    private let queue = DispatchQueue(label: "courierd.file-flusher")
    private let state = LockedValue(State())

    /// Flushes files under `directory` (courierd's downloads directory): `delay` seconds after a file is queued while
    /// `transfersRunning` is false, at most `patience` seconds after one is queued while it is true.
    package init(
        journal: Journal,
        directory: URL,
        delay: TimeInterval,
        patience: TimeInterval,
        transfersRunning: @escaping @Sendable () -> Bool,
        logger: Logger
    ) {
        self.journal = journal
        self.directory = directory
        self.delay = delay
        self.patience = max(patience, delay)
        self.transfersRunning = transfersRunning
        self.logger = logger
    }

    /// Queues `path` (recorded in the journal as unflushed) for the next batch.
    package func enqueue(_ path: String) {
        let due = DispatchTime.now() + (transfersRunning() ? patience : delay)
        let schedule = state.withLock { state -> Int? in
            state.queued.append(path)
            if let scheduled = state.due, scheduled <= due {
                return nil
            }
            state.due = due
            return state.batch
        }
        if let batch = schedule {
            queue.asyncAfter(deadline: due) { [self] in
                self.flushBatch(batch)
            }
        }
    }

    /// Flushes every file queued so far, on the caller's thread once the queue is free.
    package func drain() {
        queue.sync {
            flushBatch(nil)
        }
    }

    /// How many files wait for a batch.
    package var queuedCount: Int {
        state.withLock { $0.queued.count }
    }

    /// Flushes the queued files: those of `scheduled` (nil: whatever is queued), unless that batch was flushed.
    private func flushBatch(_ scheduled: Int?) {
        let batch = state.withLock { state -> [String] in
            guard scheduled == nil || scheduled == state.batch else {
                return []
            }
            defer {
                state.queued = []
                state.due = nil
                state.batch += 1
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
