import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Group commit for the journal. Its SQLite database commits with `synchronous = NORMAL` (a commit is written to the
/// write-ahead log, not flushed), and whoever is about to act on what it wrote — answer an app, push events, delete a
/// file — calls ``sync()`` first: it returns once every commit made before the call is on disk. One caller at a time
/// flushes the log (`fdatasync`); callers that come while it does wait for the next flush, which covers all their
/// commits at once. A journal written by many threads thus flushes once per round rather than once per commit.
///
/// What a power cut can lose is what no `sync()` has covered: commits nobody acted on yet. SQLite's log checks each
/// frame, so the journal always opens as of some commit; with `NORMAL`, SQLite flushes the log before it copies it
/// into the database, and the database after (checkpoints).
///
/// A new name a commit speaks of (a finished download renamed into courierd's downloads directory) is flushed the same
/// way: ``namedFile(in:)`` before the commit, and the next flush syncs each such directory once, before the log. So
/// whoever acts on the commit finds the name on disk, and a flush makes many renames durable with one `fsync` of
/// their directory instead of one each.
///
/// `@unchecked Sendable`: `state` is read and written only with `condition` locked.
final class GroupCommit: @unchecked Sendable {
    private struct State {
        /// Commits made, and how many of them are known on disk.
        var committed: UInt64 = 0
        var durable: UInt64 = 0
        var flushing = false
        /// Directories with names made since the last flush began.
        var directories: Set<String> = []
    }

    /// The write-ahead log's path (`journal.sqlite-wal`).
    private let log: String
    private let condition = NSCondition()
    private var state = State()

    init(log: String) {
        self.log = log
    }

    /// A commit returned (call after each write transaction).
    func committed() {
        condition.lock()
        state.committed += 1
        condition.unlock()
    }

    /// A name was made in `directory` (a rename into it) that a commit about to be made speaks of: the next flush
    /// (the one that commit's `sync()` waits for, or an earlier one) syncs the directory before the log.
    func namedFile(in directory: String) {
        condition.lock()
        state.directories.insert(directory)
        condition.unlock()
    }

    /// Returns once every commit made before this call is on disk; false when the flush failed (the commits may be
    /// lost with a power cut, though the journal goes on).
    @discardableResult
    func sync() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let target = state.committed
        while state.durable < target {
            if state.flushing {
                condition.wait()
                continue
            }
            state.flushing = true
            let covered = state.committed
            let directories = state.directories
            state.directories = []
            condition.unlock()
            // The names first: a commit on disk speaks only of names that are.
            var flushed = directories.allSatisfy(DurableDirectory.sync)
            flushed = flushed && flushLog()
            condition.lock()
            if !flushed {
                state.directories.formUnion(directories)
            }
            state.flushing = false
            if flushed {
                state.durable = max(state.durable, covered)
            }
            condition.broadcast()
            if !flushed {
                return false
            }
        }
        return true
    }

    /// `fdatasync` of the log. No log: everything was checkpointed into the database, which SQLite flushed.
    private func flushLog() -> Bool {
        let descriptor = open(log, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return errno == ENOENT
        }
        defer { close(descriptor) }
        return fdatasync(descriptor) == 0
    }
}
