package import Courier
package import Foundation
import GRDB

/// Sessions, tasks and the events waiting for their app.
extension Journal {
    // MARK: Sessions

    /// Records (or updates) a background session; returns the first task identifier it has not used.
    package func openSession(_ session: IPCMessage.OpenSession, app: String) throws(JournalError) -> Int {
        let configuration = try Journal.encode(session)
        return try write { db in
            try db.execute(
                sql: """
                    INSERT INTO session (identifier, app, configuration) VALUES (?, ?, ?)
                    ON CONFLICT(identifier) DO UPDATE SET app = excluded.app, configuration = excluded.configuration
                    """,
                arguments: [session.identifier, app, configuration]
            )
            return try Int.fetchOne(
                db,
                sql: "SELECT nextTaskIdentifier FROM session WHERE identifier = ?",
                arguments: [session.identifier]
            ) ?? 1
        }
    }

    /// Every journaled session's identifier and app.
    package func sessions() throws(JournalError) -> [(identifier: String, app: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT identifier, app FROM session ORDER BY identifier").map { row in
                (identifier: row["identifier"], app: row["app"])
            }
        }
    }

    /// Forgets a session with its tasks and events.
    package func removeSession(_ identifier: String) throws(JournalError) {
        try write { db in
            try db.execute(sql: "DELETE FROM event WHERE session = ?", arguments: [identifier])
            try db.execute(sql: "DELETE FROM task WHERE session = ?", arguments: [identifier])
            try db.execute(sql: "DELETE FROM session WHERE identifier = ?", arguments: [identifier])
        }
    }

    // MARK: Tasks

    /// Journals a new task; when this returns, the task survives a crash of the daemon or of the machine.
    package func insertTask(_ task: IPCMessage.BackgroundTask, session: String) throws(JournalError) {
        let spec = try Journal.encode(task)
        try write { db in
            try Journal.requireSession(session, in: db)
            let exists = try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM task WHERE session = ? AND identifier = ?",
                arguments: [session, task.identifier]
            ) ?? false
            guard !exists else {
                throw JournalError.duplicateTask(session: session, task: task.identifier)
            }
            try db.execute(
                sql: "INSERT INTO task (session, identifier, spec, state) VALUES (?, ?, ?, ?)",
                arguments: [session, task.identifier, spec, JournaledTask.State.waiting.rawValue]
            )
            try db.execute(
                sql: "UPDATE session SET nextTaskIdentifier = max(nextTaskIdentifier, ?) WHERE identifier = ?",
                arguments: [task.identifier + 1, session]
            )
        }
    }

    /// Records how far a download got: after a crash it resumes from `bytesOnDisk` with `validator`.
    package func checkpoint(
        session: String,
        task: Int,
        bytesOnDisk: Int64,
        expectedLength: Int64,
        validator: String?,
        at date: Date
    ) throws(JournalError) {
        try updateTask(
            session: session,
            task: task,
            sql: "bytesOnDisk = ?, expectedLength = ?, validator = ?, checkpointedAt = ?",
            arguments: [bytesOnDisk, expectedLength, validator, date.timeIntervalSince1970]
        )
    }

    package func setState(_ state: JournaledTask.State, session: String, task: Int) throws(JournalError) {
        try updateTask(session: session, task: task, sql: "state = ?", arguments: [state.rawValue])
    }

    package func removeTask(session: String, task: Int) throws(JournalError) {
        try write { db in
            try db.execute(sql: "DELETE FROM task WHERE session = ? AND identifier = ?", arguments: [session, task])
        }
    }

    /// The session's tasks, by identifier.
    package func tasks(session: String) throws(JournalError) -> [JournaledTask] {
        let rows = try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM task WHERE session = ? ORDER BY identifier", arguments: [session])
        }
        var tasks: [JournaledTask] = []
        for row in rows {
            let spec: Data = row["spec"]
            let stateName: String = row["state"]
            guard let state = JournaledTask.State(rawValue: stateName) else {
                throw JournalError.unreadable("task state \"\(stateName)\"")
            }
            let checkpointed: Double? = row["checkpointedAt"]
            tasks.append(
                JournaledTask(
                    session: session,
                    spec: try Journal.decode(IPCMessage.BackgroundTask.self, from: spec),
                    state: state,
                    bytesOnDisk: row["bytesOnDisk"],
                    expectedLength: row["expectedLength"],
                    validator: row["validator"],
                    checkpointedAt: checkpointed.map(Date.init(timeIntervalSince1970:))
                )
            )
        }
        return tasks
    }

    // MARK: Events

    /// Journals an event for the session's app with the session's next sequence number; it stays until the app
    /// acknowledges it.
    package func appendEvent(
        _ event: IPCMessage.BackgroundEvent,
        task: Int,
        session: String
    ) throws(JournalError) -> IPCMessage.SequencedEvent {
        let body = try Journal.encode(event)
        let sequence: Int64 = try write { db in
            try Journal.requireSession(session, in: db)
            let sequence = try Int64.fetchOne(
                db,
                sql: "SELECT nextSequence FROM session WHERE identifier = ?",
                arguments: [session]
            ) ?? 1
            try db.execute(
                sql: "INSERT INTO event (session, sequence, task, body) VALUES (?, ?, ?, ?)",
                arguments: [session, sequence, task, body]
            )
            try db.execute(
                sql: "UPDATE session SET nextSequence = ? WHERE identifier = ?",
                arguments: [sequence + 1, session]
            )
            return sequence
        }
        return IPCMessage.SequencedEvent(sequence: UInt64(sequence), task: task, event: event)
    }

    /// The events the app has not acknowledged, in order.
    package func pendingEvents(session: String) throws(JournalError) -> [IPCMessage.SequencedEvent] {
        let rows = try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT sequence, task, body FROM event WHERE session = ? ORDER BY sequence",
                arguments: [session]
            )
        }
        var events: [IPCMessage.SequencedEvent] = []
        for row in rows {
            let sequence: Int64 = row["sequence"]
            let body: Data = row["body"]
            events.append(
                IPCMessage.SequencedEvent(
                    sequence: UInt64(sequence),
                    task: row["task"],
                    event: try Journal.decode(IPCMessage.BackgroundEvent.self, from: body)
                )
            )
        }
        return events
    }

    /// The app has delivered every event up to `through`: they are deleted. Returns how many were.
    @discardableResult
    package func acknowledge(session: String, through: UInt64) throws(JournalError) -> Int {
        try write { db in
            try db.execute(
                sql: "DELETE FROM event WHERE session = ? AND sequence <= ?",
                arguments: [session, Int64(clamping: through)]
            )
            return db.changesCount
        }
    }

    // MARK: Helpers

    private func updateTask(
        session: String,
        task: Int,
        sql assignments: String,
        arguments: StatementArguments
    ) throws(JournalError) {
        try write { db in
            try db.execute(
                sql: "UPDATE task SET \(assignments) WHERE session = ? AND identifier = ?",
                arguments: arguments + [session, task]
            )
            guard db.changesCount == 1 else {
                throw JournalError.unknownTask(session: session, task: task)
            }
        }
    }

    private static func requireSession(_ session: String, in db: Database) throws {
        let known = try Bool.fetchOne(db, sql: "SELECT 1 FROM session WHERE identifier = ?", arguments: [session])
        guard known ?? false else {
            throw JournalError.unknownSession(session)
        }
    }

    static func encode(_ value: some Encodable) throws(JournalError) -> Data {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return try encoder.encode(value)
        } catch {
            throw JournalError.unreadable("cannot encode \(type(of: value)): \(error)")
        }
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws(JournalError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw JournalError.unreadable("\(Value.self): \(error)")
        }
    }
}
