package import Courier
package import Foundation
import GRDB

/// What became of the tasks whose apps have heard their end: each one's last snapshot, with how it ended, kept for
/// ``historyRetention`` (at most ``historyLimit`` per session) after the acknowledgement that removed the task, so that
/// `courier tasks --all` can say that a download finished, or how it failed, after the app has been told.
extension Journal {
    /// How long an ended task stays in the history.
    package static let historyRetention: TimeInterval = 7 * 24 * 3600
    /// The most ended tasks a session keeps in the history (the latest): trimmed back to this when it is a tenth over
    /// at a look (``HistoryUpkeep``: at most a tenth more may end between two looks).
    package static let historyLimit = 1000

    /// The ended tasks of `session` still in the history, oldest first: the rows of the first form (a snapshot
    /// encoded at the acknowledgement, before the journal's v6), then those of the second (the task's row and its
    /// completion, made into a snapshot here).
    package func history(session: String) throws(JournalError) -> [IPCMessage.TaskSnapshot] {
        let (bodies, rows) = try read { db in
            (
                try Data.fetchAll(
                    db,
                    sql: "SELECT snapshot FROM history WHERE session = ? ORDER BY endedAt, identifier",
                    arguments: [session]
                ),
                try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM endedTask WHERE session = ? ORDER BY endedAt, identifier",
                    arguments: [session]
                )
            )
        }
        var snapshots: [IPCMessage.TaskSnapshot] = []
        for body in bodies {
            snapshots.append(try Journal.decode(IPCMessage.TaskSnapshot.self, from: body))
        }
        for row in rows {
            var snapshot = IPCMessage.TaskSnapshot(journaled: try Journal.task(row, session: session))
            let completion = try (row["completion"] as Data?).map { body throws(JournalError) in
                try Journal.decode(EventRecord.self, from: body).event
            }
            snapshot.end(with: completion?.completion != nil ? completion : nil)
            snapshot.endedAt = Date(timeIntervalSince1970: row["endedAt"])
            snapshots.append(snapshot)
        }
        return snapshots
    }

    /// The tasks an acknowledgement of the events up to `through` ends: completed, with no event after it.
    ///
    /// Each task's events are looked up through `event_session_task` (`INDEXED BY`): left to itself, SQLite searched
    /// the primary key for every event after `through` instead, once per completed task; with thousands of events
    /// pending an acknowledgement took seconds, and courierd read nothing else from the app meanwhile (a W6 run through
    /// courierd stalled for minutes).
    static func endingTasks(session: String, through: Int64, in db: Database) throws -> [Int] {
        try db.fetchCached(sql: endingTasksQuery) { statement in
            try Int.fetchAll(statement, arguments: [session, JournaledTask.State.completed.rawValue, through])
        }
    }

    /// ``endingTasks(session:through:in:)``'s query (its arguments: session, the completed state, `through`).
    package static let endingTasksQuery = """
        SELECT identifier FROM task WHERE session = ? AND state = ?
        AND NOT EXISTS (
            SELECT 1 FROM event INDEXED BY event_session_task
            WHERE event.session = task.session AND event.task = task.identifier AND event.sequence > ?
        )
        """

    /// Copies the row of each task of `tasks` (completed, about to leave the task table) to the history with the
    /// body of its last event up to `through` (its completion, whose counts the task's row, written at checkpoints,
    /// may lag), before those events are deleted; nothing is decoded. Then, with `upkeep`, drops what is past the
    /// retention or the limit.
    static func keepHistory(of tasks: [Int], session: String, through: Int64, upkeep: Bool, in db: Database) throws {
        let now = Date().timeIntervalSince1970
        let copy = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO endedTask (
                    session, identifier, endedAt, spec, state, bytesOnDisk, expectedLength, validator, checkpointedAt,
                    bytesSent, expectedToSend, attempts, retryAt, createdAt, completion
                )
                SELECT
                    session, identifier, ?, spec, state, bytesOnDisk, expectedLength, validator, checkpointedAt,
                    bytesSent, expectedToSend, attempts, retryAt, createdAt,
                    (SELECT body FROM event INDEXED BY event_session_task
                     WHERE event.session = task.session AND event.task = task.identifier AND event.sequence <= ?
                     ORDER BY event.sequence DESC LIMIT 1)
                FROM task WHERE session = ? AND identifier = ?
                """
        )
        for identifier in tasks {
            try copy.execute(arguments: [now, through, session, identifier])
        }
        copy.dropArguments()
        guard upkeep else {
            return
        }
        for table in ["history", "endedTask"] {
            try db.executeCached(sql: "DELETE FROM \(table) WHERE endedAt < ?", arguments: [now - historyRetention])
        }
        let kept =
            try Int.fetchOne(db, sql: "SELECT count(*) FROM endedTask WHERE session = ?", arguments: [session]) ?? 0
        guard kept > historyLimit + historyLimit / 10 else {
            return
        }
        try db.executeCached(
            sql: """
                DELETE FROM endedTask WHERE session = ? AND identifier NOT IN
                (SELECT identifier FROM endedTask WHERE session = ? ORDER BY endedAt DESC, identifier DESC LIMIT ?)
                """,
            arguments: [session, session, historyLimit]
        )
        try db.executeCached(sql: "DELETE FROM history WHERE session = ?", arguments: [session])
    }
}

extension IPCMessage.TaskSnapshot {
    /// A journaled task as its row says: its spec, the counts of its last checkpoint, waiting.
    init(journaled task: JournaledTask) {
        self.init(
            identifier: task.identifier,
            taskDescription: task.spec.taskDescription,
            state: SessionTask.State.suspended.rawValue,
            countOfBytesReceived: task.bytesOnDisk,
            countOfBytesExpectedToReceive: task.expectedLength,
            countOfBytesSent: task.bytesSent,
            countOfBytesExpectedToSend: task.expectedToSend
        )
        self.task = task.spec
        // The password stays in courierd.
        self.task?.spec.task?.credentialURL = nil
    }

    /// The task ended: completed, with `completion`'s error and counts when it is known (the task's row, written at
    /// checkpoints, may lag).
    mutating func end(with completion: IPCMessage.BackgroundEvent?) {
        state = SessionTask.State.completed.rawValue
        guard let completion else {
            return
        }
        outcome = completion.completion?.error
        statusCode = completion.completion?.finalStatus
        count(completion.progress)
    }

    /// Takes the counts of `progress`.
    mutating func count(_ progress: TransferProgress) {
        countOfBytesReceived = progress.received
        countOfBytesExpectedToReceive = progress.expectedToReceive
        countOfBytesSent = progress.sent
        countOfBytesExpectedToSend = progress.expectedToSend
    }
}
