package import Courier
package import Foundation
import GRDB

/// Sessions, tasks and the events waiting for their app.
extension Journal {
    // MARK: Sessions

    /// Records (or updates) a background session; returns the first task identifier it has not used.
    package func openSession(_ session: IPCMessage.OpenSession, app: String) throws(JournalError) -> Int {
        let configuration = try Journal.encode(SessionRecord(session))
        return try write { db in
            try db.executeCached(
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

    /// Every journaled session's configuration as its app last opened it, and the app.
    package func sessionConfigurations() throws(JournalError) -> [(configuration: IPCMessage.OpenSession, app: String)] {
        let rows = try read { db in
            try Row.fetchAll(db, sql: "SELECT app, configuration FROM session ORDER BY identifier")
        }
        var sessions: [(configuration: IPCMessage.OpenSession, app: String)] = []
        for row in rows {
            let configuration: Data = row["configuration"]
            let record = try Journal.decode(SessionRecord.self, from: configuration)
            sessions.append((configuration: record.configuration, app: row["app"]))
        }
        return sessions
    }

    /// Forgets a session with its tasks and events.
    package func removeSession(_ identifier: String) throws(JournalError) {
        try write { db in
            try db.executeCached(sql: "DELETE FROM event WHERE session = ?", arguments: [identifier])
            try db.executeCached(sql: "DELETE FROM task WHERE session = ?", arguments: [identifier])
            try db.executeCached(sql: "DELETE FROM history WHERE session = ?", arguments: [identifier])
            try db.executeCached(sql: "DELETE FROM endedTask WHERE session = ?", arguments: [identifier])
            try db.executeCached(sql: "DELETE FROM session WHERE identifier = ?", arguments: [identifier])
        }
    }

    // MARK: Apps

    /// Records that `app` connected: how to relaunch it (its hello's launch command; nil keeps the one already
    /// recorded), and that it runs again after a force-quit.
    package func registerApp(_ app: String, launchCommand: [String]?) throws(JournalError) {
        let encoded = try launchCommand.map { command throws(JournalError) in try Journal.encode(command) }
        try write { db in
            try db.executeCached(
                sql: """
                    INSERT INTO app (name, launchCommand, forceQuit) VALUES (?, ?, 0)
                    ON CONFLICT(name) DO UPDATE SET launchCommand = coalesce(excluded.launchCommand, launchCommand),
                    forceQuit = 0
                    """,
                arguments: [app, encoded]
            )
        }
    }

    /// The user force-quit `app`: it is not relaunched until it connects by itself.
    package func markForceQuit(_ app: String) throws(JournalError) {
        try write { db in
            try db.executeCached(
                sql: """
                    INSERT INTO app (name, forceQuit) VALUES (?, 1)
                    ON CONFLICT(name) DO UPDATE SET forceQuit = 1
                    """,
                arguments: [app]
            )
        }
    }

    /// The command that relaunches `app`; nil when it registered none or the user force-quit it.
    package func launchCommand(of app: String) throws(JournalError) -> [String]? {
        let row = try read { db in
            try Row.fetchOne(db, sql: "SELECT launchCommand, forceQuit FROM app WHERE name = ?", arguments: [app])
        }
        guard let row, !(row["forceQuit"] as Bool), let data = row["launchCommand"] as Data? else {
            return nil
        }
        return try Journal.decode([String].self, from: data)
    }

    /// The sessions `app` opened.
    package func sessions(ofApp app: String) throws(JournalError) -> [String] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM session WHERE app = ? ORDER BY identifier", arguments: [app])
        }
    }

    /// The app that opened `session`.
    package func app(ofSession session: String) throws(JournalError) -> String? {
        try read { db in
            try String.fetchOne(db, sql: "SELECT app FROM session WHERE identifier = ?", arguments: [session])
        }
    }

    // MARK: Tasks

    /// Journals a new task: it survives a crash of the daemon when this returns, of the machine once ``sync()`` has.
    package func insertTask(
        _ task: IPCMessage.BackgroundTask,
        session: String,
        at date: Date = Date()
    ) throws(JournalError) {
        if let refusal = try insertTasks([NewTask(task: task, session: session)], at: date)[0] {
            throw refusal
        }
    }

    /// A task ``insertTasks(_:at:)`` journals.
    package struct NewTask: Sendable {
        package var task: IPCMessage.BackgroundTask
        package var session: String

        package init(task: IPCMessage.BackgroundTask, session: String) {
            self.task = task
            self.session = session
        }
    }

    /// Journals new tasks in one transaction (the `createTask` frames of one read); returns, for each, nil or why it
    /// was refused alone (its session unknown, its identifier taken). A failure of the journal itself (a full disk)
    /// throws: none was journaled.
    package func insertTasks(_ tasks: [NewTask], at date: Date = Date()) throws(JournalError) -> [JournalError?] {
        var specs: [Data] = []
        specs.reserveCapacity(tasks.count)
        for entry in tasks {
            specs.append(try Journal.encode(TaskRecord(entry.task)))
        }
        return try write { db in
            let sessionKnown = try db.cachedStatement(sql: "SELECT 1 FROM session WHERE identifier = ?")
            let taskExists = try db.cachedStatement(sql: "SELECT 1 FROM task WHERE session = ? AND identifier = ?")
            let insert = try db.cachedStatement(
                sql: "INSERT INTO task (session, identifier, spec, state, createdAt) VALUES (?, ?, ?, ?, ?)"
            )
            let advance = try db.cachedStatement(
                sql: "UPDATE session SET nextTaskIdentifier = max(nextTaskIdentifier, ?) WHERE identifier = ?"
            )
            var refusals: [JournalError?] = []
            for (entry, spec) in zip(tasks, specs) {
                let (task, session) = (entry.task, entry.session)
                guard try Bool.fetchOne(sessionKnown, arguments: [session]) ?? false else {
                    refusals.append(.unknownSession(session))
                    continue
                }
                guard !(try Bool.fetchOne(taskExists, arguments: [session, task.identifier]) ?? false) else {
                    refusals.append(.duplicateTask(session: session, task: task.identifier))
                    continue
                }
                try insert.execute(arguments: [
                    session, task.identifier, spec, JournaledTask.State.waiting.rawValue, date.timeIntervalSince1970,
                ])
                try advance.execute(arguments: [task.identifier + 1, session])
                refusals.append(nil)
            }
            for statement in [sessionKnown, taskExists, insert, advance] {
                statement.dropArguments()
            }
            return refusals
        }
    }

    /// Records how far a transfer got, and journals `progress` (a coalesced `wroteData` / `sentBodyData`) for the
    /// app in the same transaction. After a crash a download resumes from the checkpoint's partial file.
    @discardableResult
    package func checkpoint(
        _ checkpoint: TransferCheckpoint,
        session: String,
        task: Int,
        progress: IPCMessage.BackgroundEvent? = nil
    ) throws(JournalError) -> IPCMessage.SequencedEvent? {
        let encoded = try Journal.encode(checkpoint)
        let body = try progress.map { event throws(JournalError) in try Journal.encode(EventRecord(event)) }
        return try write { db in
            try Journal.update(
                db,
                session: session,
                task: task,
                sql: """
                    checkpoint = ?, bytesOnDisk = ?, expectedLength = ?, validator = ?, checkpointedAt = ?,
                    bytesSent = ?, expectedToSend = ?
                    """,
                arguments: [
                    encoded, checkpoint.received, checkpoint.expectedToReceive, checkpoint.partial?.validator,
                    checkpoint.at.timeIntervalSince1970, checkpoint.sent, checkpoint.expectedToSend,
                ]
            )
            guard let progress, let body else {
                return nil
            }
            return try Journal.append(progress, body: body, file: nil, task: task, session: session, in: db)
        }
    }

    package func setState(_ state: JournaledTask.State, session: String, task: Int) throws(JournalError) {
        try updateTask(session: session, task: task, sql: "state = ?", arguments: [state.rawValue])
    }

    /// Replaces the task's spec (its delayed start decided: no begin date, maybe the app's new request).
    package func replaceSpec(_ spec: IPCMessage.BackgroundTask, session: String, task: Int) throws(JournalError) {
        let body = try Journal.encode(TaskRecord(spec))
        try updateTask(session: session, task: task, sql: "spec = ?", arguments: [body])
    }

    package func removeTask(session: String, task: Int) throws(JournalError) {
        try write { db in
            try db.executeCached(
                sql: "DELETE FROM task WHERE session = ? AND identifier = ?",
                arguments: [session, task]
            )
        }
    }

    /// The session's tasks, by identifier.
    /// The session's tasks by identifier; with `limit`, at most that many from position `offset` (a page of
    /// `courier tasks`: only those are decoded).
    package func tasks(session: String, offset: Int = 0, limit: Int? = nil) throws(JournalError) -> [JournaledTask] {
        let rows = try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM task WHERE session = ? ORDER BY identifier LIMIT ? OFFSET ?",
                arguments: [session, limit ?? -1, offset]
            )
        }
        var tasks: [JournaledTask] = []
        for row in rows {
            tasks.append(try Journal.task(row, session: session))
        }
        return tasks
    }

    /// The task a row of the task table holds.
    static func task(_ row: Row, session: String) throws(JournalError) -> JournaledTask {
        let spec: Data = row["spec"]
        let stateName: String = row["state"]
        guard let state = JournaledTask.State(rawValue: stateName) else {
            throw JournalError.unreadable("task state \"\(stateName)\"")
        }
        let checkpointed: Double? = row["checkpointedAt"]
        let checkpoint: Data? = row["checkpoint"]
        let retryAt: Double? = row["retryAt"]
        let createdAt: Double = row["createdAt"]
        return JournaledTask(
            session: session,
            spec: try Journal.decode(TaskRecord.self, from: spec).task,
            state: state,
            bytesOnDisk: row["bytesOnDisk"],
            expectedLength: row["expectedLength"],
            validator: row["validator"],
            checkpointedAt: checkpointed.map(Date.init(timeIntervalSince1970:)),
            checkpoint: try checkpoint.map { data throws(JournalError) in
                try Journal.decode(TransferCheckpoint.self, from: data)
            },
            bytesSent: row["bytesSent"],
            expectedToSend: row["expectedToSend"],
            attempts: row["attempts"],
            retryAt: retryAt.map(Date.init(timeIntervalSince1970:)),
            createdAt: Date(timeIntervalSince1970: createdAt)
        )
    }

    // MARK: Events

    /// Journals an event for the session's app with the session's next sequence number; it stays until the app
    /// acknowledges it. `file` is a file the event hands over, deleted with the event's acknowledgement.
    package func appendEvent(
        _ event: IPCMessage.BackgroundEvent,
        task: Int,
        session: String,
        file: String? = nil
    ) throws(JournalError) -> IPCMessage.SequencedEvent {
        let body = try Journal.encode(EventRecord(event))
        return try write { db in
            try Journal.append(event, body: body, file: file, task: task, session: session, in: db)
        }
    }

    /// Appends one event inside a transaction.
    static func append(
        _ event: IPCMessage.BackgroundEvent,
        body: Data,
        file: String?,
        task: Int,
        session: String,
        in db: Database
    ) throws -> IPCMessage.SequencedEvent {
        try append([(event, body, file)], task: task, session: session, in: db)[0]
    }

    /// Appends a task's events inside a transaction, numbered in order from the session's next sequence number (read
    /// and advanced once for all of them).
    static func append(
        _ events: [(event: IPCMessage.BackgroundEvent, body: Data, file: String?)],
        task: Int,
        session: String,
        in db: Database
    ) throws -> [IPCMessage.SequencedEvent] {
        try Journal.requireSession(session, in: db)
        let first =
            try db.fetchCached(sql: "SELECT nextSequence FROM session WHERE identifier = ?") { statement in
                try Int64.fetchOne(statement, arguments: [session])
            } ?? 1
        let insert = try db.cachedStatement(
            sql: "INSERT INTO event (session, sequence, task, body, file) VALUES (?, ?, ?, ?, ?)"
        )
        var sequenced: [IPCMessage.SequencedEvent] = []
        sequenced.reserveCapacity(events.count)
        for (offset, entry) in events.enumerated() {
            let sequence = first + Int64(offset)
            try insert.execute(arguments: [session, sequence, task, entry.body, entry.file])
            sequenced.append(IPCMessage.SequencedEvent(sequence: UInt64(sequence), task: task, event: entry.event))
        }
        insert.dropArguments()
        try db.executeCached(
            sql: "UPDATE session SET nextSequence = ? WHERE identifier = ?",
            arguments: [first + Int64(events.count), session]
        )
        return sequenced
    }

    /// The sequence number of the session's last event (0: none yet).
    package func lastSequence(session: String) throws(JournalError) -> UInt64 {
        let next = try read { db in
            try Int64.fetchOne(db, sql: "SELECT nextSequence FROM session WHERE identifier = ?", arguments: [session])
        }
        return UInt64(max(0, (next ?? 1) - 1))
    }

    /// The events the app has not acknowledged, in order; with `after`, those numbered after it, and with `limit`, at
    /// most that many (a page of a catch-up).
    package func pendingEvents(
        session: String,
        after: UInt64 = 0,
        limit: Int? = nil
    ) throws(JournalError) -> [IPCMessage.SequencedEvent] {
        // Each body is decoded where SQLite holds it (no copy of it is made).
        try read { db in
            var events: [IPCMessage.SequencedEvent] = []
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT sequence, task, body FROM event WHERE session = ? AND sequence > ? ORDER BY sequence LIMIT ?
                    """,
                arguments: [session, Int64(clamping: after), limit ?? -1]
            )
            while let row = try rows.next() {
                let sequence: Int64 = row[0]
                let task: Int = row[1]
                let event = try row.withUnsafeData(atIndex: 2) { body in
                    try Journal.decode(EventRecord.self, from: body ?? Data()).event
                }
                events.append(IPCMessage.SequencedEvent(sequence: UInt64(sequence), task: task, event: event))
            }
            return events
        }
    }

    // MARK: Helpers

    func updateTask(
        session: String,
        task: Int,
        sql assignments: String,
        arguments: StatementArguments
    ) throws(JournalError) {
        try write { db in
            try Journal.update(db, session: session, task: task, sql: assignments, arguments: arguments)
        }
    }

    static func update(
        _ db: Database,
        session: String,
        task: Int,
        sql assignments: String,
        arguments: StatementArguments
    ) throws {
        try db.executeCached(
            sql: "UPDATE task SET \(assignments) WHERE session = ? AND identifier = ?",
            arguments: arguments + [session, task]
        )
        guard db.changesCount == 1 else {
            throw JournalError.unknownTask(session: session, task: task)
        }
    }

    private static func requireSession(_ session: String, in db: Database) throws {
        let known = try db.fetchCached(sql: "SELECT 1 FROM session WHERE identifier = ?") { statement in
            try Bool.fetchOne(statement, arguments: [session])
        }
        guard known ?? false else {
            throw JournalError.unknownSession(session)
        }
    }

    /// `value` as a journal record (``RecordFormat``).
    static func encode(_ value: some Encodable) throws(JournalError) -> Data {
        do {
            return try RecordEncoder.encode(value)
        } catch {
            throw JournalError.unreadable("cannot encode \(type(of: value)): \(error)")
        }
    }

    /// A journal record: in the ``RecordFormat``, or JSON as journals written before it hold them.
    package static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws(JournalError) -> Value {
        do {
            if data.first == RecordFormat.marker {
                return try RecordDecoder.decode(type, from: data)
            }
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw JournalError.unreadable("\(Value.self): \(error)")
        }
    }
}
