package import Courier
package import Foundation
import GRDB

/// How tasks end, wait for a retry, and leave the journal once their app has heard of the end.
extension Journal {
    /// A task's end as ``finish(session:_:)`` journals it: its last events (a final `progress`, `relocated`,
    /// `response`, `downloaded`, `complete`), `file`, the finished download that `downloaded` hands over, and
    /// `unsynced`, its record when its bytes are not flushed yet.
    package struct Finish: Sendable {
        package var task: Int
        package var events: [IPCMessage.BackgroundEvent]
        package var file: String? = nil
        package var unsynced: UnsyncedFile? = nil
    }

    /// Ends a task: marks it completed and journals its last events in one transaction, so a crash leaves either all
    /// of them or none.
    package func finish(
        session: String,
        task: Int,
        events: [IPCMessage.BackgroundEvent],
        file: String? = nil,
        unsynced: UnsyncedFile? = nil
    ) throws(JournalError) -> [IPCMessage.SequencedEvent] {
        let (sequenced, refusals) = try finish(
            session: session,
            [Finish(task: task, events: events, file: file, unsynced: unsynced)]
        )
        if let refusal = refusals.first {
            throw refusal.error
        }
        return sequenced
    }

    /// Ends tasks in one transaction (the attempts that ended in one batch of the engine's reports), each all or
    /// nothing: returns the events journaled, in order, and the tasks refused alone (not in the journal any more:
    /// their session was invalidated meanwhile). A failure of the journal itself (a full disk) throws: none was
    /// journaled.
    package func finish(
        session: String,
        _ finishes: [Finish]
    ) throws(JournalError) -> (events: [IPCMessage.SequencedEvent], refused: [(task: Int, error: JournalError)]) {
        var bodies: [[Data]] = []
        var unsynced: [[any DatabaseValueConvertible]?] = []
        for finish in finishes {
            var encoded: [Data] = []
            for event in finish.events {
                encoded.append(try Journal.encode(EventRecord(event)))
            }
            bodies.append(encoded)
            unsynced.append(finish.unsynced.map(Journal.row(of:)))
        }
        return try write { db in
            var sequenced: [IPCMessage.SequencedEvent] = []
            var refused: [(task: Int, error: JournalError)] = []
            for (index, finish) in finishes.enumerated() {
                // A task is refused by its first write, or not at all: each is all or nothing without a savepoint (a
                // savepoint each cost two statements and a copy of every page the task's writes changed).
                do {
                    try Journal.update(
                        db,
                        session: session,
                        task: finish.task,
                        sql: "state = ?, retryAt = NULL",
                        arguments: [JournaledTask.State.completed.rawValue]
                    )
                } catch let error as JournalError {
                    refused.append((finish.task, error))
                    continue
                }
                if let row = unsynced[index] {
                    try Journal.insertUnsyncedFile(row, in: db)
                }
                let entries = zip(finish.events, bodies[index]).map { event, body in
                    if case .downloaded = event.payload {
                        (event: event, body: body, file: finish.file)
                    } else {
                        (event: event, body: body, file: String?.none)
                    }
                }
                sequenced += try Journal.append(entries, task: finish.task, session: session, in: db)
            }
            return (sequenced, refused)
        }
    }

    /// Records a failed attempt: the task waits until `date` before its next one.
    package func scheduleRetry(session: String, task: Int, attempts: Int, at date: Date) throws(JournalError) {
        try updateTask(
            session: session,
            task: task,
            sql: "state = ?, attempts = ?, retryAt = ?",
            arguments: [JournaledTask.State.waiting.rawValue, attempts, date.timeIntervalSince1970]
        )
    }

    /// What an acknowledgement removed.
    package struct Acknowledgement: Sendable, Equatable {
        /// Events deleted.
        package var events: Int
        /// Files the deleted events had handed over that are flushed; the daemon deletes them (``FileFlusher`` deletes
        /// the others once they are).
        package var files: [String]
        /// Completed tasks whose every event is now acknowledged: gone from the journal.
        package var tasks: [Int]
    }

    /// The app has delivered every event up to `through`: they are deleted, and so are the completed tasks that
    /// have no event left (their last snapshot goes to the history, `courier tasks --all`).
    @discardableResult
    package func acknowledge(session: String, through: UInt64) throws(JournalError) -> Acknowledgement {
        let through = Int64(clamping: through)
        return try write { db in
            // The tasks this acknowledgement ends: completed, and no event of theirs left after it.
            let finished = try Journal.endingTasks(session: session, through: through, in: db)
            let upkeep = historyUpkeep.isDue(session, ended: finished.count, now: Date())
            try Journal.keepHistory(of: finished, session: session, through: through, upkeep: upkeep, in: db)
            let files = try db.fetchCached(
                sql: "SELECT file FROM event WHERE session = ? AND sequence <= ? AND file IS NOT NULL"
            ) { statement in
                try String.fetchAll(statement, arguments: [session, through])
            }
            try db.executeCached(
                sql: "DELETE FROM event WHERE session = ? AND sequence <= ?",
                arguments: [session, through]
            )
            let events = db.changesCount
            try db.executeCached(
                sql: """
                    DELETE FROM task WHERE session = ? AND state = ?
                    AND NOT EXISTS (SELECT 1 FROM event WHERE event.session = task.session AND event.task = task.identifier)
                    """,
                arguments: [session, JournaledTask.State.completed.rawValue]
            )
            let deletable = try Journal.deletableAfterAcknowledgement(files, in: db)
            return Acknowledgement(events: events, files: deletable, tasks: finished)
        }
    }
}

extension Journal {
    /// How many of the session's tasks are not completed, and how many events its app has not acknowledged: two
    /// counts, without decoding a record (`courier sessions`).
    package func activity(session: String) throws(JournalError) -> (activeTasks: Int, pendingEvents: Int) {
        try read { db in
            (
                try Int.fetchOne(
                    db,
                    sql: "SELECT count(*) FROM task WHERE session = ? AND state != ?",
                    arguments: [session, JournaledTask.State.completed.rawValue]
                ) ?? 0,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM event WHERE session = ?", arguments: [session]) ?? 0
            )
        }
    }

    /// Every file the journal still refers to: files events hand over or that are not flushed yet, upload copies,
    /// checkpointed partial files.
    package func referencedFiles() throws(JournalError) -> Set<String> {
        let (eventFiles, specs, checkpoints) = try read { db in
            (
                try String.fetchAll(
                    db,
                    sql: "SELECT file FROM event WHERE file IS NOT NULL UNION SELECT path FROM unsyncedFile"
                ),
                try Data.fetchAll(db, sql: "SELECT spec FROM task"),
                try Data.fetchAll(db, sql: "SELECT checkpoint FROM task WHERE checkpoint IS NOT NULL")
            )
        }
        var files = Set(eventFiles)
        for spec in specs {
            if let upload = try Journal.decode(TaskRecord.self, from: spec).task.uploadFile {
                files.insert(upload)
            }
        }
        for checkpoint in checkpoints {
            if let partial = try Journal.decode(TransferCheckpoint.self, from: checkpoint).partial {
                files.insert(partial.file)
            }
        }
        return files
    }
}
