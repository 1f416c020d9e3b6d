import Courier
package import Foundation
import GRDB
package import Logging

/// courierd's durable record of background sessions, their tasks and the events their apps have not yet
/// acknowledged: one SQLite database in WAL mode, written with `synchronous = NORMAL` and flushed by group commit
/// (``GroupCommit``): a write is on disk once a ``sync()`` called after it returned, and courierd calls it before it
/// acts on what it wrote (a task is durable before its `createTask` is answered, an event before the app hears it).
///
/// Thread-safe: every call runs on GRDB's serial writer. A journal that cannot be used (corrupt, torn, written by a
/// newer courierd) is moved aside with a log line and a fresh one is started: the daemon always starts.
package final class Journal: Sendable {
    /// The version of the schema this build writes; the migrations are named `v1`, `v2`, …
    package static let schemaVersion = 7

    private let database: DatabaseQueue
    private let groupCommit: GroupCommit
    /// When each session's history is next looked after.
    let historyUpkeep = HistoryUpkeep()
    package let url: URL

    /// Why the previous journal file was set aside at open, if it was.
    package let recovery: JournalRecovery?

    /// Opens (or creates) the journal at `url`. Never fails for the journal's own content: an unusable file is moved
    /// to `<name>.<reason>-<timestamp>` beside it and a new journal begins; it fails only when the directory cannot
    /// hold a database at all.
    package init(at url: URL, logger: Logger? = nil) throws(JournalError) {
        self.url = url
        do {
            try DurableDirectory.make(url.deletingLastPathComponent())
        } catch {
            throw JournalError.cannotOpen(path: url.path, reason: "\(error)")
        }
        var recovery: JournalRecovery?
        do {
            database = try Journal.openChecked(at: url)
        } catch let problem as JournalRecovery.Reason {
            let moved = Journal.setAside(url, reason: problem)
            recovery = JournalRecovery(reason: problem, movedTo: moved)
            logger?.error(
                "journal unusable; starting a new one",
                metadata: ["path": "\(url.path)", "reason": "\(problem)", "kept": "\(moved?.path ?? "nothing")"]
            )
            do {
                database = try Journal.openChecked(at: url)
            } catch {
                throw JournalError.cannotOpen(path: url.path, reason: "\(error)")
            }
        } catch {
            throw JournalError.cannotOpen(path: url.path, reason: "\(error)")
        }
        self.recovery = recovery
        groupCommit = GroupCommit(log: url.path + "-wal")
        // SQLite flushes the directory when it creates the WAL, not when it creates the database: the journal's own
        // name is flushed here, or a power cut after the first task could leave a WAL without its database.
        DurableDirectory.sync(url.deletingLastPathComponent().path)
    }

    // MARK: Opening

    private static func openChecked(at url: URL) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal
        // One connection, one courierd (its lock file): the write-ahead log's index in the connection's memory instead
        // of a shared `-shm` file, and no file locks taken and released around every transaction (six `fcntl`s a task
        // in W6). Set before the first read, so SQLite never maps the shared index. The journal is read by another
        // connection only once this one is closed (tests, the next courierd).
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
        }
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: url.path, configuration: configuration)
            // NORMAL (GRDB's choice for WAL too, set here for good: a queue has one connection): a commit is not
            // flushed; ``sync()`` flushes the log for every commit before it at once (group commit).
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            // A page cache of 16 MiB (SQLite's default is 2 MiB): with the default, a session of thousands of tasks
            // read its pages back from the file at every commit (565,537 `pread`s of the database for 2,000 downloads,
            // 5 with this cache; W6 through courierd 22.5 s of CPU, then 16.4 to 18.9 s). A cap, not an allocation.
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA cache_size = -16384") }
            // Statement journals in memory: a statement inside a transaction keeps the pages it changes, to undo it
            // alone, and SQLite spills them to a file in /var/tmp past 64 KiB; after the first spill every later
            // statement wrote there (16 `pwrite`s a task in W6, on the disk's file system whatever the journal's).
            // What it holds is needed only until the statement ends; nothing durable goes there.
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        } catch let error as DatabaseError where error.isCorruption {
            throw JournalRecovery.Reason.corrupt("\(error.message ?? "\(error)")")
        }
        do {
            try queue.read { db in
                let check = try String.fetchOne(db, sql: "PRAGMA quick_check") ?? "no answer"
                guard check == "ok" else {
                    throw JournalRecovery.Reason.corrupt("quick_check: \(check)")
                }
            }
            let migrator = Journal.migrator
            let superseded = try queue.read { db in try migrator.hasBeenSuperseded(db) }
            guard !superseded else {
                let applied = try queue.read { db in try migrator.appliedIdentifiers(db) }
                throw JournalRecovery.Reason.newerSchema(applied.sorted().joined(separator: ","))
            }
            try migrator.migrate(queue)
        } catch let error as DatabaseError where error.isCorruption {
            throw JournalRecovery.Reason.corrupt("\(error.message ?? "\(error)")")
        }
        return queue
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "session") { table in
                table.primaryKey("identifier", .text)
                table.column("app", .text).notNull()
                table.column("configuration", .blob).notNull()
                table.column("nextSequence", .integer).notNull().defaults(to: 1)
                table.column("nextTaskIdentifier", .integer).notNull().defaults(to: 1)
            }
            try db.create(table: "task") { table in
                table.column("session", .text).notNull().references("session", onDelete: .cascade)
                table.column("identifier", .integer).notNull()
                table.column("spec", .blob).notNull()
                table.column("state", .text).notNull()
                table.column("bytesOnDisk", .integer).notNull().defaults(to: 0)
                table.column("expectedLength", .integer).notNull().defaults(to: -1)
                table.column("validator", .text)
                table.column("checkpointedAt", .double)
                table.primaryKey(["session", "identifier"])
            }
            try db.create(table: "event") { table in
                table.column("session", .text).notNull().references("session", onDelete: .cascade)
                table.column("sequence", .integer).notNull()
                table.column("task", .integer).notNull()
                table.column("body", .blob).notNull()
                table.primaryKey(["session", "sequence"])
            }
        }
        migrator.registerMigration("v2") { db in
            try db.alter(table: "task") { table in
                // A TransferCheckpoint (JSON): the partial file and how to resume it after a crash.
                table.add(column: "checkpoint", .blob)
                table.add(column: "bytesSent", .integer).notNull().defaults(to: 0)
                table.add(column: "expectedToSend", .integer).notNull().defaults(to: -1)
                // Failed attempts so far, and when the next one may start (a retry's backoff).
                table.add(column: "attempts", .integer).notNull().defaults(to: 0)
                table.add(column: "retryAt", .double)
                // When the task was journaled: its resource timeout counts from here.
                table.add(column: "createdAt", .double).notNull().defaults(to: 0)
            }
            try db.alter(table: "event") { table in
                // A file the event hands to the app (`downloaded`), deleted once the event is acknowledged.
                table.add(column: "file", .text)
            }
            try db.create(table: "app") { table in
                table.primaryKey("name", .text)
                // The argv that relaunches the app (JSON), as its last hello said.
                table.column("launchCommand", .blob)
                // The user force-quit the app: its sessions' tasks were cancelled and it is not relaunched until it
                // connects again by itself.
                table.column("forceQuit", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v3") { db in
            try db.alter(table: "app") { table in
                // Background fetch and remote notifications (Journal+Apps.swift): the device token, handed out at the
                // app's first registration and kept; the fetch interval asked for (null: never); whether it
                // registered for remote notifications.
                table.add(column: "deviceToken", .text)
                table.add(column: "fetchInterval", .double)
                table.add(column: "remoteNotifications", .boolean).notNull().defaults(to: false)
            }
            try db.create(index: "app_deviceToken", on: "app", columns: ["deviceToken"], unique: true)
            try db.create(table: "fetchSchedule") { table in
                // One row: the FetchScheduler (JSON), what it learned and the fetches it recorded.
                table.primaryKey("id", .integer).check { $0 == 1 }
                table.column("scheduler", .blob).notNull()
            }
        }
        migrator.registerMigration("v4") { db in
            try db.create(table: "history") { table in
                // A task its app has heard the end of (Journal+History.swift): its last snapshot (JSON), kept for
                // `courier tasks --all` for a while after the task left the task table.
                table.column("session", .text).notNull()
                table.column("identifier", .integer).notNull()
                table.column("endedAt", .double).notNull()
                table.column("snapshot", .blob).notNull()
                table.primaryKey(["session", "identifier"])
            }
            try db.create(index: "history_endedAt", on: "history", columns: ["endedAt"])
        }
        migrator.registerMigration("v5") { db in
            try db.create(table: "unsyncedFile") { table in
                // A finished download handed over before its bytes were flushed (Journal+UnsyncedFiles.swift).
                table.primaryKey("path", .text)
                table.column("session", .text).notNull()
                table.column("task", .integer).notNull()
                table.column("length", .integer).notNull()
                table.column("digest", .text).notNull()
                table.column("boot", .text).notNull()
                table.column("request", .blob).notNull()
                table.column("acknowledged", .boolean).notNull().defaults(to: false)
            }
            // An acknowledgement looks for the completed tasks with no event left: without these, it read every task
            // of the session and, for each completed one, every event (quadratic with thousands of tasks queued).
            try db.create(index: "task_session_state", on: "task", columns: ["session", "state"])
            try db.create(index: "event_session_task", on: "event", columns: ["session", "task"])
        }
        migrator.registerMigration("v6") { db in
            // The history's second form (Journal+History.swift): an ended task's row as the task table had it and the
            // body of its last event (its completion), copied by the acknowledgement without being decoded; the
            // snapshot is made when the history is listed. `history` keeps the rows of the first form (a snapshot
            // encoded at the acknowledgement) until they age out.
            try db.create(table: "endedTask") { table in
                table.column("session", .text).notNull()
                table.column("identifier", .integer).notNull()
                table.column("endedAt", .double).notNull()
                table.column("spec", .blob).notNull()
                table.column("state", .text).notNull()
                table.column("bytesOnDisk", .integer).notNull()
                table.column("expectedLength", .integer).notNull()
                table.column("validator", .text)
                table.column("checkpointedAt", .double)
                table.column("bytesSent", .integer).notNull()
                table.column("expectedToSend", .integer).notNull()
                table.column("attempts", .integer).notNull()
                table.column("retryAt", .double)
                table.column("createdAt", .double).notNull()
                table.column("completion", .blob)
                table.primaryKey(["session", "identifier"])
            }
            try db.create(index: "endedTask_session_endedAt", on: "endedTask", columns: ["session", "endedAt"])
        }
        migrator.registerMigration("v7") { _ in
            // No table changes: records are written in the record format (RecordEncoder.swift) from now on, and the
            // JSON ones already here are still read. Registered so that an earlier courierd, which reads only JSON,
            // sets this journal aside as a newer one's instead of failing on each record.
        }
        return migrator
    }

    /// Moves an unusable journal (and its WAL and shared-memory files) aside; returns where, or nil when nothing
    /// could be kept.
    private static func setAside(_ url: URL, reason: JournalRecovery.Reason) -> URL? {
        let stamp = Int(Date().timeIntervalSince1970)
        let destination = url.appendingPathExtension("\(reason.tag)-\(stamp)")
        let fileManager = FileManager.default
        var kept: URL?
        if (try? fileManager.moveItem(at: url, to: destination)) != nil {
            kept = destination
        } else {
            try? fileManager.removeItem(at: url)
        }
        for suffix in ["-wal", "-shm"] {
            let sidecar = URL(fileURLWithPath: url.path + suffix)
            let keptSidecar = URL(fileURLWithPath: destination.path + suffix)
            if (try? fileManager.moveItem(at: sidecar, to: keptSidecar)) == nil {
                try? fileManager.removeItem(at: sidecar)
            }
        }
        return kept
    }

    // MARK: Inspection

    /// The SQLite journal mode in force (`wal`).
    package func journalMode() throws(JournalError) -> String {
        try read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The SQLite `synchronous` level in force (1, NORMAL: ``sync()`` flushes).
    package func synchronousLevel() throws(JournalError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Moves every committed write from the write-ahead log into the journal file and empties the log (courierd's
    /// clean stop): the journal file alone is then the whole state, to copy or back up without its `-wal`.
    package func foldWriteAheadLog() throws(JournalError) {
        do {
            _ = try database.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        } catch {
            throw Journal.failure(error)
        }
    }

    func read<Value>(_ body: (Database) throws -> Value) throws(JournalError) -> Value {
        do {
            return try database.read(body)
        } catch {
            throw Journal.failure(error)
        }
    }

    /// Returns once every write that returned before this call is on disk; concurrent callers share one flush (group
    /// commit). False when the flush failed: those writes may not survive a power cut (the journal goes on).
    @discardableResult
    package func sync() -> Bool {
        groupCommit.sync()
    }

    /// A file was renamed into `directory`, and the commit about to be made names it: the name is flushed with the
    /// commit, before anyone acts on it (``GroupCommit``), instead of by the caller.
    package func namedFile(in directory: String) {
        groupCommit.namedFile(in: directory)
    }

    func write<Value>(_ body: (Database) throws -> Value) throws(JournalError) -> Value {
        do {
            let value = try database.write(body)
            groupCommit.committed()
            return value
        } catch let error as JournalError {
            throw error
        } catch {
            // A statement that failed keeps the values it was given (``Statement/dropArguments()`` runs after
            // successes only): the cached statements go, and their values with them.
            database.releaseMemory()
            throw Journal.failure(error)
        }
    }

    /// What SQLite's (or GRDB's) `error` means for the caller: a full or failing disk apart from the rest.
    private static func failure(_ error: any Error) -> JournalError {
        if let journal = error as? JournalError {
            // A record that did not decode inside a read.
            return journal
        }
        return switch (error as? DatabaseError)?.resultCode.primaryResultCode {
        case .SQLITE_FULL?: .storageFull("\(error)")
        case .SQLITE_IOERR?: .storageFailed("\(error)")
        default: .failed("\(error)")
        }
    }
}

extension DatabaseError {
    /// SQLite says the file is not a database, or is damaged.
    fileprivate var isCorruption: Bool {
        resultCode == .SQLITE_CORRUPT || resultCode == .SQLITE_NOTADB
    }
}
