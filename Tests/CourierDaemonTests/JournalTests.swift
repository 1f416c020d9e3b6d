import Courier
import CourierDaemon
import Foundation
import GRDB
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The journal on real files: durability across reopening, event sequences and acknowledgements, and the files a
/// daemon may find at start (corrupt, torn, written by a newer courierd).
@Suite("courierd journal")
struct JournalTests {
    /// A fresh directory for one test's journal, removed by `cleanup`.
    struct Place {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("courier-journal-tests-\(UUID().uuidString)", isDirectory: true)
        var url: URL { directory.appendingPathComponent("journal.sqlite") }

        func cleanup() {
            try? FileManager.default.removeItem(at: directory)
        }

        func leftovers() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
        }
    }

    static let session = IPCMessage.OpenSession(request: 1, identifier: "com.example.podcasts.bg")

    static func task(_ identifier: Int, description: String = "episode") -> IPCMessage.BackgroundTask {
        let request = URLRequest(url: URL(string: "http://127.0.0.1:8080/episode/\(identifier)")!)
        return IPCMessage.BackgroundTask(
            identifier: identifier,
            kind: .download,
            request: TaskRequest(request),
            taskDescription: description
        )
    }

    @Test("WAL mode; a journaled task and its checkpoint are there after reopening")
    func durable() throws {
        let place = Place()
        defer { place.cleanup() }
        do {
            let journal = try Journal(at: place.url)
            #expect(try journal.journalMode() == "wal")
            // NORMAL: the journal flushes by group commit (sync()).
            #expect(try journal.synchronousLevel() == 1)
            #expect(try journal.openSession(Self.session, app: "com.example.podcasts") == 1)
            try journal.insertTask(Self.task(1), session: Self.session.identifier)
            try journal.insertTask(Self.task(7), session: Self.session.identifier)
            let date = Date(timeIntervalSince1970: 1_800_000_000)
            let progress = try journal.checkpoint(
                TransferCheckpoint(received: 4096, expectedToReceive: 10_000, boot: "b1", at: date),
                session: Self.session.identifier,
                task: 7,
                progress: .wrote(4096, of: 10_000)
            )
            #expect(progress?.sequence == 1)
            try journal.setState(.running, session: Self.session.identifier, task: 7)
            #expect(journal.recovery == nil)
        }
        let reopened = try Journal(at: place.url)
        #expect(reopened.recovery == nil)
        let tasks = try reopened.tasks(session: Self.session.identifier)
        #expect(tasks.map(\.identifier) == [1, 7])
        #expect(tasks[0].spec == Self.task(1))
        #expect(tasks[0].state == .waiting)
        #expect(tasks[1].state == .running)
        #expect(tasks[1].bytesOnDisk == 4096)
        #expect(tasks[1].expectedLength == 10_000)
        #expect(tasks[1].checkpoint?.boot == "b1")
        #expect(tasks[1].checkpointedAt == Date(timeIntervalSince1970: 1_800_000_000))
        // The next identifier is past every journaled task.
        #expect(try reopened.openSession(Self.session, app: "com.example.podcasts") == 8)
        #expect(try reopened.sessions().map(\.identifier) == [Self.session.identifier])
    }

    @Test("typed errors: an unknown session, a duplicate task, an unknown task")
    func refusals() throws {
        let place = Place()
        defer { place.cleanup() }
        let journal = try Journal(at: place.url)
        #expect(throws: JournalError.unknownSession("nope")) { try journal.insertTask(Self.task(1), session: "nope") }
        _ = try journal.openSession(Self.session, app: "app")
        try journal.insertTask(Self.task(1), session: Self.session.identifier)
        #expect(throws: JournalError.duplicateTask(session: Self.session.identifier, task: 1)) {
            try journal.insertTask(Self.task(1), session: Self.session.identifier)
        }
        #expect(throws: JournalError.unknownTask(session: Self.session.identifier, task: 2)) {
            try journal.setState(.running, session: Self.session.identifier, task: 2)
        }
        #expect(throws: JournalError.unknownSession("nope")) {
            try journal.appendEvent(.completed(nil), task: 1, session: "nope")
        }
    }

    @Test("events are numbered per session, survive reopening until acknowledged, and never reuse a number")
    func events() throws {
        let place = Place()
        defer { place.cleanup() }
        let other = IPCMessage.OpenSession(request: 2, identifier: "other")
        do {
            let journal = try Journal(at: place.url)
            _ = try journal.openSession(Self.session, app: "app")
            _ = try journal.openSession(other, app: "app")
            let first = try journal.appendEvent(
                .wrote(10, of: 100),
                task: 1,
                session: Self.session.identifier
            )
            let second = try journal.appendEvent(
                .downloaded("/tmp/x"),
                task: 1,
                session: Self.session.identifier
            )
            let elsewhere = try journal.appendEvent(.completed(nil), task: 3, session: other.identifier)
            #expect([first.sequence, second.sequence, elsewhere.sequence] == [1, 2, 1])
        }
        let journal = try Journal(at: place.url)
        let pending = try journal.pendingEvents(session: Self.session.identifier)
        #expect(pending.map(\.sequence) == [1, 2])
        #expect(pending[1].event == .downloaded("/tmp/x"))
        // A client that dies after delivering #1 acknowledged only it: #2 comes again.
        #expect(try journal.acknowledge(session: Self.session.identifier, through: 1).events == 1)
        #expect(try journal.pendingEvents(session: Self.session.identifier).map(\.sequence) == [2])
        let third = try journal.appendEvent(
            .completed(CourierError(.timedOut, "slow")),
            task: 1,
            session: Self.session.identifier
        )
        #expect(third.sequence == 3)
        #expect(try journal.acknowledge(session: Self.session.identifier, through: 3).events == 2)
        #expect(try journal.pendingEvents(session: Self.session.identifier).isEmpty)
        #expect(try journal.pendingEvents(session: other.identifier).count == 1)
        try journal.removeSession(other.identifier)
        #expect(try journal.pendingEvents(session: other.identifier).isEmpty)
        #expect(try journal.sessions().map(\.identifier) == [Self.session.identifier])
    }

    @Test("a task whose end its app heard leaves the task table for the history, with how it ended, across reopening")
    func history() throws {
        let place = Place()
        defer { place.cleanup() }
        let session = Self.session.identifier
        do {
            let journal = try Journal(at: place.url)
            _ = try journal.openSession(Self.session, app: "app")
            for identifier in [1, 2, 3] {
                try journal.insertTask(Self.task(identifier, description: "episode-\(identifier)"), session: session)
            }
            _ = try journal.finish(
                session: session,
                task: 1,
                events: [.wrote(100, of: 100), .completed(nil, TransferProgress(received: 100, expectedToReceive: 100))]
            )
            _ = try journal.finish(
                session: session,
                task: 2,
                events: [.completed(CourierError(.cancelled, "cancelled by the user"))]
            )
            // Nothing is history before the app acknowledges.
            #expect(try journal.history(session: session).isEmpty)
            let acknowledged = try journal.acknowledge(session: session, through: 3)
            #expect(acknowledged.tasks.sorted() == [1, 2])
        }
        let journal = try Journal(at: place.url)
        let history = try journal.history(session: session)
        #expect(history.map(\.identifier) == [1, 2])
        #expect(history.map(\.taskDescription) == ["episode-1", "episode-2"])
        #expect(history.allSatisfy { $0.state == SessionTask.State.completed.rawValue && $0.endedAt != nil })
        #expect(history[0].outcome == nil)
        // The counts of the completion, not of the last checkpoint.
        #expect(history[0].countOfBytesReceived == 100 && history[0].countOfBytesExpectedToReceive == 100)
        #expect(history[1].outcome?.code == .cancelled)
        #expect(history[0].task?.request.url?.absoluteString == "http://127.0.0.1:8080/episode/1")
        // Task 3 still runs: not history, still a task.
        #expect(try journal.tasks(session: session).map(\.identifier) == [3])
        try journal.removeSession(session)
        #expect(try journal.history(session: session).isEmpty)
    }

    @Test("the history keeps about the latest historyLimit ended tasks, looked after every tenth of it, not at each acknowledgement")
    func historyCap() throws {
        let place = Place()
        defer { place.cleanup() }
        let session = Self.session.identifier
        let journal = try Journal(at: place.url)
        _ = try journal.openSession(Self.session, app: "app")
        let limit = Journal.historyLimit
        let total = limit + limit / 2
        var most = 0
        for identifier in 1...total {
            try journal.insertTask(Self.task(identifier), session: session)
            let sequence = try journal.finish(session: session, task: identifier, events: [.completed(nil)])
            _ = try journal.acknowledge(session: session, through: sequence.last?.sequence ?? 0)
            if identifier.isMultiple(of: 25) {
                most = max(most, try journal.history(session: session).count)
            }
        }
        // Over the limit by at most a tenth, and by what ended since the last look.
        #expect(most <= limit + limit / 10 + HistoryUpkeep.endedBetween)
        let kept = try journal.history(session: session).map(\.identifier)
        #expect(kept.count >= limit && kept.count <= limit + limit / 10 + HistoryUpkeep.endedBetween)
        // The latest are the ones kept.
        #expect(kept.last == total)
        #expect(kept.min() ?? 0 > total - kept.count - 1)
    }

    @Test("history rows of the first form (a snapshot encoded at the acknowledgement) are listed before the new ones")
    func historyOfTheFirstForm() throws {
        let place = Place()
        defer { place.cleanup() }
        let session = Self.session.identifier
        do {
            let journal = try Journal(at: place.url)
            _ = try journal.openSession(Self.session, app: "app")
        }
        // As a courierd before the journal's v6 wrote it.
        var earlier = IPCMessage.TaskSnapshot(identifier: 7, taskDescription: "episode-7", state: 3, countOfBytesReceived: 42)
        earlier.outcome = CourierError(.timedOut, "the request timed out")
        earlier.endedAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970 - 60)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = try encoder.encode(earlier)
        try DatabaseQueue(path: place.url.path).write { db in
            try db.execute(
                sql: "INSERT INTO history (session, identifier, endedAt, snapshot) VALUES (?, ?, ?, ?)",
                arguments: [session, 7, earlier.endedAt!.timeIntervalSince1970, body]
            )
        }
        let journal = try Journal(at: place.url)
        try journal.insertTask(Self.task(8, description: "episode-8"), session: session)
        _ = try journal.finish(session: session, task: 8, events: [.completed(nil, TransferProgress(received: 9))])
        #expect(try journal.acknowledge(session: session, through: 1).tasks == [8])
        let history = try journal.history(session: session)
        #expect(history.map(\.identifier) == [7, 8])
        #expect(history.first == earlier)
        #expect(history.last?.countOfBytesReceived == 9 && history.last?.outcome == nil)
        try journal.removeSession(session)
        #expect(try journal.history(session: session).isEmpty)
    }

    @Test("an acknowledgement finds the tasks it ends through each task's events, not through every later event")
    func endingTasksQueryPlan() throws {
        let place = Place()
        defer { place.cleanup() }
        do {
            let journal = try Journal(at: place.url)
            _ = try journal.openSession(Self.session, app: "app")
        }
        let plan = try DatabaseQueue(path: place.url.path).read { db in
            try Row.fetchAll(
                db,
                sql: "EXPLAIN QUERY PLAN " + Journal.endingTasksQuery,
                arguments: ["session", "completed", 1]
            ).map { $0["detail"] as String }
        }
        // The correlated look-up: the task's own events (a handful), never the primary key's range of every event
        // after the acknowledged one (quadratic with thousands of events pending).
        #expect(plan.contains { $0.contains("event USING INDEX event_session_task") }, "\(plan)")
        #expect(!plan.contains { $0.contains("sequence>?") }, "\(plan)")
    }

    @Test("a file that is not a database: set aside with a log line, a new journal starts")
    func corrupt() throws {
        let place = Place()
        defer { place.cleanup() }
        try FileManager.default.createDirectory(at: place.directory, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: place.url)
        let journal = try Journal(at: place.url)
        guard case .corrupt? = journal.recovery?.reason else {
            Issue.record("expected a corrupt recovery, got \(String(describing: journal.recovery))")
            return
        }
        #expect(journal.recovery?.movedTo?.lastPathComponent.hasPrefix("journal.sqlite.corrupt-") == true)
        #expect(try journal.sessions().isEmpty)
        _ = try journal.openSession(Self.session, app: "app")
        #expect(place.leftovers().contains { $0.hasPrefix("journal.sqlite.corrupt-") })
    }

    @Test("a torn journal (cut short, or a page overwritten mid-file) is set aside, never trusted", arguments: [
        "cut", "overwritten",
    ])
    func torn(damage: String) throws {
        let place = Place()
        defer { place.cleanup() }
        do {
            let journal = try Journal(at: place.url)
            _ = try journal.openSession(Self.session, app: "app")
            let description = String(repeating: "x", count: 200)
            for identifier in 1...200 {
                let task = Self.task(identifier, description: description)
                try journal.insertTask(task, session: Self.session.identifier)
            }
        }
        // Closing the last connection folded the WAL into the main file; damage it.
        let handle = try FileHandle(forUpdating: place.url)
        let size = try handle.seekToEnd()
        if damage == "cut" {
            try handle.truncate(atOffset: size / 2)
        } else {
            try handle.seek(toOffset: size / 2)
            try handle.write(contentsOf: Data(repeating: 0xFF, count: 4096))
        }
        try handle.close()
        let journal = try Journal(at: place.url)
        guard case .corrupt? = journal.recovery?.reason else {
            Issue.record("expected a corrupt recovery, got \(String(describing: journal.recovery))")
            return
        }
        #expect(try journal.tasks(session: Self.session.identifier).isEmpty)
        #expect(place.leftovers().contains { $0.hasPrefix("journal.sqlite.corrupt-") })
    }

    @Test("a journal written by a newer courierd is set aside (kept for it), and a new one starts")
    func newerSchema() throws {
        let place = Place()
        defer { place.cleanup() }
        do {
            let journal = try Journal(at: place.url)
            _ = try journal.openSession(Self.session, app: "app")
        }
        // What a newer build's migrator leaves behind.
        try SQLiteShell.execute("INSERT INTO grdb_migrations (identifier) VALUES ('v99')", on: place.url)
        let journal = try Journal(at: place.url)
        guard case .newerSchema(let migrations)? = journal.recovery?.reason else {
            Issue.record("expected a newer-schema recovery, got \(String(describing: journal.recovery))")
            return
        }
        #expect(migrations == "v1,v2,v3,v4,v5,v6,v7,v99")
        #expect(journal.recovery?.movedTo?.lastPathComponent.hasPrefix("journal.sqlite.newer-") == true)
        #expect(try journal.sessions().isEmpty)
    }

    @Test("an app's launch command is kept across hellos without one, and withheld after a force-quit until it connects")
    func launchCommands() throws {
        let place = Place()
        defer { place.cleanup() }
        let journal = try Journal(at: place.url)
        try journal.registerApp("a", launchCommand: ["/usr/bin/a", "--bg"])
        #expect(try journal.launchCommand(of: "a") == ["/usr/bin/a", "--bg"])
        try journal.registerApp("a", launchCommand: nil)
        #expect(try journal.launchCommand(of: "a") == ["/usr/bin/a", "--bg"])
        try journal.markForceQuit("a")
        #expect(try journal.launchCommand(of: "a") == nil)
        try journal.registerApp("a", launchCommand: nil)
        #expect(try journal.launchCommand(of: "a") == ["/usr/bin/a", "--bg"])
        #expect(try journal.launchCommand(of: "unknown") == nil)
    }

    @Test("a registration for remote notifications is kept when a later process of the app has not registered yet")
    func remoteNotificationsKept() throws {
        let place = Place()
        defer { place.cleanup() }
        let journal = try Journal(at: place.url)
        let token = try journal.register("a", fetchInterval: nil, remoteNotifications: true)
        // A process launched for a push sets its fetch interval before it registers again.
        #expect(try journal.register("a", fetchInterval: 0, remoteNotifications: false) == token)
        let registration = try journal.app(withDeviceToken: token)
        #expect(registration?.remoteNotifications == true)
        #expect(registration?.fetchInterval == 0)
    }
}

/// Writes to a journal file behind the journal's back, as another build or a damaged disk would.
enum SQLiteShell {
    static func execute(_ sql: String, on url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: sql) }
    }
}
