package import Courier
import Foundation
import GRDB

/// A finished download handed over before its bytes were flushed to disk (docs/reliability.md, "Files handed over
/// before they are flushed"). courierd hashes every download while the engine writes it, renames the file under
/// its downloads directory without `fsync`, and journals this record in the transaction that journals the
/// completion; ``FileFlusher`` flushes such files in batches in the background and deletes the record. After a power
/// cut (another boot), courierd checks each file still recorded against its digest before it trusts it.
package struct UnsyncedFile: Sendable, Equatable {
    /// courierd's name of the file, under its downloads directory (the app's hard link shares its bytes).
    package var path: String
    package var session: String
    package var task: Int
    package var length: Int64
    package var digest: Checksum
    /// ``BootIdentifier/current`` when the file was written: in the same boot, the page cache still holds its bytes.
    package var boot: String
    /// The app acknowledged the event that handed the file over: courierd deletes its own name once the bytes are
    /// flushed (until then it is the only way to find the app's copy again).
    package var acknowledged = false

    package init(
        path: String,
        session: String,
        task: Int,
        length: Int64,
        digest: Checksum,
        boot: String
    ) {
        self.path = path
        self.session = session
        self.task = task
        self.length = length
        self.digest = digest
        self.boot = boot
    }

    /// Whether the file at ``path`` holds the bytes it was handed over with (read from disk now).
    package var isIntact: Bool {
        holdsItsBytes(at: path)
    }

    /// Whether the file at `other` (``path``, or a copy fetched again) has this file's length and checksum.
    package func holdsItsBytes(at other: String) -> Bool {
        FileManager.default.fileLength(atPath: other) == length
            && Checksum(of: other, length: length, digest.algorithm) == digest
    }
}

extension Journal {
    /// The values of `file`'s row, made before the transaction that inserts it (``insertUnsyncedFile(_:in:)``).
    static func row(of file: UnsyncedFile) -> [any DatabaseValueConvertible] {
        [file.path, file.session, file.task, file.length, file.digest.description, file.boot, file.acknowledged]
    }

    /// Records a file's ``row(of:)`` in the transaction of `db` (a task's finish). Its `request` column is an empty
    /// blob: the row's first form kept there the request that fetched the file (without its credentials, its repeated
    /// header lines joined), which nothing reads any more; a damaged file is fetched again from its task's spec
    /// (``taskSpec(session:task:)``).
    static func insertUnsyncedFile(_ row: [any DatabaseValueConvertible], in db: Database) throws {
        try db.executeCached(
            sql: """
                INSERT OR REPLACE INTO unsyncedFile (path, session, task, length, digest, boot, request, acknowledged)
                VALUES (?, ?, ?, ?, ?, ?, x'', ?)
                """,
            arguments: StatementArguments(row)
        )
    }

    /// Of `files` (an acknowledgement's), those not flushed yet are marked acknowledged and left out: the rest may be
    /// deleted now.
    static func deletableAfterAcknowledgement(_ files: [String], in db: Database) throws -> [String] {
        var deletable: [String] = []
        for file in files {
            try db.executeCached(sql: "UPDATE unsyncedFile SET acknowledged = 1 WHERE path = ?", arguments: [file])
            if db.changesCount == 0 {
                deletable.append(file)
            }
        }
        return deletable
    }

    /// Every file handed over and not yet known flushed.
    package func unsyncedFiles() throws(JournalError) -> [UnsyncedFile] {
        let rows = try read { db in try Row.fetchAll(db, sql: "SELECT * FROM unsyncedFile ORDER BY path") }
        var files: [UnsyncedFile] = []
        for row in rows {
            let text: String = row["digest"]
            guard let digest = Checksum(text) else {
                throw JournalError.failed("unsyncedFile \(row["path"] as String): digest \(text)")
            }
            var file = UnsyncedFile(
                path: row["path"],
                session: row["session"],
                task: row["task"],
                length: row["length"],
                digest: digest,
                boot: row["boot"]
            )
            file.acknowledged = row["acknowledged"]
            files.append(file)
        }
        return files
    }

    /// The spec of task `task` of `session`, as its app made it: from the task table, or, once the app acknowledged
    /// its end, from the ended tasks the history keeps; nil when neither has it any more.
    package func taskSpec(session: String, task: Int) throws(JournalError) -> IPCMessage.BackgroundTask? {
        try read { db in
            for table in ["task", "endedTask"] {
                if let body = try Data.fetchOne(
                    db,
                    sql: "SELECT spec FROM \(table) WHERE session = ? AND identifier = ?",
                    arguments: [session, task]
                ) {
                    return try Journal.decode(TaskRecord.self, from: body).task
                }
            }
            return nil
        }
    }

    /// `paths` are on disk (flushed, or fetched again): their records go. Returns those whose events the app had
    /// acknowledged: courierd deletes them now.
    package func flushed(_ paths: [String]) throws(JournalError) -> [String] {
        try write { db in
            var acknowledged: [String] = []
            for path in paths {
                // One cached statement per file (a SELECT compiled at each call was 7 % of courierd's CPU in W6).
                let wasAcknowledged = try db.fetchCached(
                    sql: "DELETE FROM unsyncedFile WHERE path = ? RETURNING acknowledged"
                ) { statement in
                    try Bool.fetchAll(statement, arguments: [path]).first
                }
                if wasAcknowledged == true {
                    acknowledged.append(path)
                }
            }
            return acknowledged
        }
    }

    /// `file` was lost before its app acknowledged it: its task runs again from zero, as though it had not finished
    /// (its unacknowledged events are withdrawn: the app hears of the task again, with a file that is whole). A task
    /// made from resume data forgets it: its partial file became the lost one.
    package func runAgain(_ file: UnsyncedFile) throws(JournalError) {
        try write { db in
            if let body = try Data.fetchOne(
                db,
                sql: "SELECT spec FROM task WHERE session = ? AND identifier = ?",
                arguments: [file.session, file.task]
            ) {
                var spec = try Journal.decode(TaskRecord.self, from: body).task
                spec.spec.task?.resumeData = nil
                try Journal.update(
                    db,
                    session: file.session,
                    task: file.task,
                    sql: "spec = ?",
                    arguments: [try Journal.encode(TaskRecord(spec))]
                )
            }
            try db.executeCached(
                sql: "DELETE FROM event WHERE session = ? AND task = ?",
                arguments: [file.session, file.task]
            )
            try Journal.update(
                db,
                session: file.session,
                task: file.task,
                sql: "state = ?, checkpoint = NULL, bytesOnDisk = 0, retryAt = NULL",
                arguments: [JournaledTask.State.waiting.rawValue]
            )
            try db.executeCached(sql: "DELETE FROM unsyncedFile WHERE path = ?", arguments: [file.path])
        }
    }
}
