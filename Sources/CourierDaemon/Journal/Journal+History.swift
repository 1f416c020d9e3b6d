package import Courier
package import Foundation
import GRDB

/// What became of the tasks whose apps have heard their end: each one's last snapshot, with how it ended, kept for
/// ``historyRetention`` (at most ``historyLimit`` per session) after the acknowledgement that removed the task, so that
/// `courier tasks --all` can say that a download finished, or how it failed, after the app has been told.
extension Journal {
    /// How long an ended task stays in the history.
    package static let historyRetention: TimeInterval = 7 * 24 * 3600
    /// The most ended tasks a session keeps in the history (the latest): trimmed back to this once it is a tenth over,
    /// so that an acknowledgement sorts the history once per hundred ended tasks, not every time.
    package static let historyLimit = 1000

    /// The ended tasks of `session` still in the history, oldest first.
    package func history(session: String) throws(JournalError) -> [IPCMessage.TaskSnapshot] {
        let bodies = try read { db in
            try Data.fetchAll(
                db,
                sql: "SELECT snapshot FROM history WHERE session = ? ORDER BY endedAt, identifier",
                arguments: [session]
            )
        }
        var snapshots: [IPCMessage.TaskSnapshot] = []
        for body in bodies {
            snapshots.append(try Journal.decode(IPCMessage.TaskSnapshot.self, from: body))
        }
        return snapshots
    }

    /// The completion of each task whose completion is among the events up to `through`.
    static func outcomes(
        session: String,
        through: Int64,
        in db: Database
    ) throws -> [Int: IPCMessage.BackgroundEvent] {
        // The events of completed tasks only: a running task's progress is not decoded at every acknowledgement.
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT event.task, event.body FROM event JOIN task
                ON task.session = event.session AND task.identifier = event.task
                WHERE event.session = ? AND event.sequence <= ? AND task.state = ?
                """,
            arguments: [session, through, JournaledTask.State.completed.rawValue]
        )
        var outcomes: [Int: IPCMessage.BackgroundEvent] = [:]
        for row in rows {
            let body: Data = row["body"]
            let event = try Journal.decode(IPCMessage.BackgroundEvent.self, from: body)
            if event.completion != nil {
                outcomes[row["task"]] = event
            }
        }
        return outcomes
    }

    /// Records the last snapshot of each task of `tasks` (completed, about to leave the task table) with how it ended
    /// (the counts of its completion, which the task's row, written at checkpoints, may lag), and drops what is past
    /// the retention or the limit.
    static func keepHistory(
        of tasks: [Int],
        session: String,
        outcomes: [Int: IPCMessage.BackgroundEvent],
        in db: Database
    ) throws {
        let now = Date().timeIntervalSince1970
        for identifier in tasks {
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT * FROM task WHERE session = ? AND identifier = ?",
                    arguments: [session, identifier]
                )
            else {
                continue
            }
            var snapshot = IPCMessage.TaskSnapshot(journaled: try Journal.task(row, session: session))
            snapshot.end(with: outcomes[identifier])
            snapshot.endedAt = Date(timeIntervalSince1970: now)
            try db.execute(
                sql: "INSERT OR REPLACE INTO history (session, identifier, endedAt, snapshot) VALUES (?, ?, ?, ?)",
                arguments: [session, identifier, now, try Journal.encode(snapshot)]
            )
        }
        try db.execute(sql: "DELETE FROM history WHERE endedAt < ?", arguments: [now - historyRetention])
        let kept = try Int.fetchOne(db, sql: "SELECT count(*) FROM history WHERE session = ?", arguments: [session]) ?? 0
        guard kept > historyLimit + historyLimit / 10 else {
            return
        }
        try db.execute(
            sql: """
                DELETE FROM history WHERE session = ? AND identifier NOT IN
                (SELECT identifier FROM history WHERE session = ? ORDER BY endedAt DESC, identifier DESC LIMIT ?)
                """,
            arguments: [session, session, historyLimit]
        )
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
    }

    /// The task ended: completed, with `completion`'s error and counts when it is known (the task's row, written at
    /// checkpoints, may lag).
    mutating func end(with completion: IPCMessage.BackgroundEvent?) {
        state = SessionTask.State.completed.rawValue
        guard let completion else {
            return
        }
        outcome = completion.completion?.error
        countOfBytesReceived = completion.progress.received
        countOfBytesExpectedToReceive = completion.progress.expectedToReceive
        countOfBytesSent = completion.progress.sent
        countOfBytesExpectedToSend = completion.progress.expectedToSend
    }
}
