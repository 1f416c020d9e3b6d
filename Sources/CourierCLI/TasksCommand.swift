import ArgumentParser
import Courier
import CourierConcurrency
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `courier tasks [SESSION] [--all] [--watch] [--json]`: the tasks of one session (or of every session), with their
/// rate; with `--all`, also those that ended and whose apps heard it; with `--watch`, live.
struct Tasks: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List background tasks: state, bytes, rate, and why a waiting task waits.",
        discussion: """
            The rate is measured over half a second between two listings. A task leaves the list once its app has \
            heard that it ended; --all also shows those (kept by courierd for 7 days, the last 1000 of a session), \
            with how each ended: completed, cancelled (cancelled: force-quit when the user force-quit its app), \
            failed: CODE, or failed: HTTP STATUS when the server answered with an error.

            With --watch, the list is redrawn every half second with a progress bar per task (on a terminal; \
            elsewhere it is printed again every 2 seconds) until no task is left running or waiting; Ctrl-C stops \
            watching, and the tasks go on. With --watch --json, a stream for other programs: one line of JSON per \
            task each time it changed (looked at every half second; the same object as --json's), first for every \
            task running or waiting (every task with --all), last for each one's end, until none is left running or \
            waiting.
            """
    )

    @Argument(help: "The session identifier (default: every session).")
    var session: String?

    @Flag(name: [.short, .long], help: "Also list the tasks that ended, with how they ended.")
    var all = false

    @Flag(
        name: [.short, .long],
        help: "Show the tasks live, with progress bars, until none is left running or waiting."
    )
    var watch = false

    @Flag(help: "Print JSON for scripts instead of a table.")
    var json = false

    struct Row: Encodable {
        var session: String
        var task: IPCMessage.TaskSnapshot
        var url: String?
        var bytesPerSecond: Double?
    }

    func run() throws {
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        let listing = Listing(connection: connection, session: session, includesEnded: all)
        if watch && json {
            // The ended tasks too: a task whose end its app heard leaves the plain listing, and its last line must say
            // how it ended.
            let withEnded = Listing(connection: connection, session: session, includesEnded: true)
            try JSONWatch(listing: withEnded, includesEndedAtStart: all).run()
            return
        }
        if watch {
            try Watch(listing: listing).run()
            return
        }
        let rows = try listing.rowsWithRates()
        if json {
            print(try DaemonClient.json(rows))
        } else {
            print(Self.table(rows, bars: false))
        }
    }

    /// The table of `rows`; with `bars`, a progress bar beside the bytes of each task that moves them.
    static func table(_ rows: [Row], bars: Bool) -> String {
        let cells = rows.map { row -> [String] in
            let task = row.task
            let upload = task.task?.kind == .upload
            let moved = upload ? task.countOfBytesSent : task.countOfBytesReceived
            let total = upload ? task.countOfBytesExpectedToSend : task.countOfBytesExpectedToReceive
            // Before the server says, what the app declared (`countOfBytesClientExpectsTo…`), marked "~".
            let details = task.task?.spec.task
            let declared =
                upload ? details?.countOfBytesClientExpectsToSend : details?.countOfBytesClientExpectsToReceive
            var bytes = Formatting.bytes(moved)
            if total >= 0 {
                bytes += " / " + Formatting.bytes(total)
            } else if let declared {
                bytes += " / ~" + Formatting.bytes(declared)
            }
            if bars && task.state != SessionTask.State.completed.rawValue {
                let percent = Formatting.percent(moved, of: total) ?? "   ?"
                bytes = Formatting.bar(moved, of: total, width: 22) + " " + percent + "  " + bytes
            }
            return [
                row.session, "\(task.identifier)",
                stateName(task.state, outcome: task.outcome, status: task.statusCode), bytes,
                row.bytesPerSecond.map(Formatting.rate) ?? "-",
                task.waitingReason ?? task.taskDescription ?? row.url ?? "",
            ]
        }
        return DaemonClient.table(["SESSION", "TASK", "STATE", "BYTES", "RATE", "WAITING FOR / DESCRIPTION"], cells)
    }

    /// A completed task says how it ended: `completed`, `cancelled` (`cancelled: force-quit` when the user force-quit
    /// its app), `failed: <code>`, or `failed: HTTP <status>` when the server answered with an error (a task that
    /// URLSession counts as a success: the app has the response).
    static func stateName(_ raw: Int, outcome: CourierError? = nil, status: Int? = nil) -> String {
        switch SessionTask.State(rawValue: raw) {
        case .running: "running"
        case .suspended: "waiting"
        case .canceling: "canceling"
        case .completed:
            switch outcome {
            case nil:
                if let status, status >= 400 { "failed: HTTP \(status)" } else { "completed" }
            case let error? where error.code == .cancelled:
                error.backgroundTaskCancelledReason == .userForceQuitApplication ? "cancelled: force-quit" : "cancelled"
            case let error?: "failed: \(error.code)"
            }
        case nil: "?"
        }
    }
}

extension Tasks {
    /// The tasks of one session, or of every session, as courierd lists them.
    struct Listing {
        let connection: DaemonConnection
        let session: String?
        let includesEnded: Bool

        /// Every task now.
        func snapshots() throws -> [(String, IPCMessage.TaskSnapshot)] {
            var sessions: [String]
            if let session {
                sessions = [session]
            } else {
                let result = try DaemonClient.request(connection) { .listSessions(.init(request: $0)) }
                guard case .sessions(let all) = result else {
                    throw CommandFailure(description: "courierd answered something else than a session list")
                }
                sessions = all.map(\.identifier)
            }
            return try sessions.flatMap { session -> [(String, IPCMessage.TaskSnapshot)] in
                try pages(of: session).map { (session, $0) }
            }
        }

        /// How many pages are asked for ahead of the one being decoded.
        static let pagesAhead = 4

        /// Every task of `session`, a page at a time, with the next ``pagesAhead`` pages asked for before this one is
        /// decoded: courierd makes pages while `courier` reads them (one after the other, both sat idle half the time;
        /// with one page ahead, each still waited for the other now and then).
        private func pages(of session: String) throws -> [IPCMessage.TaskSnapshot] {
            let pageSize = IPCMessage.ListTasks.pageSize
            let answers = WaitableValue<[Int: Result<IPCMessage.Reply.Result, CourierError>]>([:])
            func ask(_ page: Int) {
                let sent = connection.send(
                    request: { number in
                        .listTasks(
                            .init(
                                request: number,
                                session: session,
                                includesEnded: includesEnded,
                                offset: page * pageSize,
                                limit: pageSize
                            )
                        )
                    },
                    onAnswer: { answer in answers.withLock { $0[page] = answer } }
                )
                if !sent {
                    answers.withLock { $0[page] = .failure(CourierError(.unknown, "the connection to courierd ended")) }
                }
            }
            for page in 0..<Self.pagesAhead {
                ask(page)
            }
            var snapshots: [IPCMessage.TaskSnapshot] = []
            for page in 0... {
                guard answers.wait(atMost: 30, until: { $0[page] != nil }) else {
                    throw CommandFailure(description: "courierd did not answer the task listing within 30 s")
                }
                let answer = answers.withLock { $0.removeValue(forKey: page) }
                let listed: [IPCMessage.TaskSnapshot]
                switch answer {
                case .success(.tasks(let page))?:
                    listed = page
                case .failure(let error)?:
                    throw CommandFailure(description: error.message)
                default:
                    listed = []
                }
                snapshots += listed
                guard listed.count == pageSize else {
                    break
                }
                ask(page + Self.pagesAhead)
            }
            return snapshots
        }

        /// The rows of `now`, with the rate of each running task since `before`, `interval` seconds earlier.
        func rows(
            _ now: [(String, IPCMessage.TaskSnapshot)],
            since before: [(String, IPCMessage.TaskSnapshot)],
            interval: Double
        ) -> [Row] {
            let earlier = Dictionary(before.map { ("\($0.0)#\($0.1.identifier)", $0.1) }, uniquingKeysWith: { $1 })
            return now.map { session, task -> Row in
                var rate: Double?
                if task.state == SessionTask.State.running.rawValue,
                    let earlier = earlier["\(session)#\(task.identifier)"]
                {
                    let moved = (task.countOfBytesReceived + task.countOfBytesSent)
                        - (earlier.countOfBytesReceived + earlier.countOfBytesSent)
                    rate = Double(max(0, moved)) / interval
                }
                let url = task.task?.request.url?.absoluteString
                return Row(session: session, task: task, url: url, bytesPerSecond: rate)
            }
        }

        /// Two listings half a second apart when a task runs (for its rate), else one.
        func rowsWithRates() throws -> [Row] {
            let first = try snapshots()
            guard first.contains(where: { $0.1.state == SessionTask.State.running.rawValue }) else {
                return rows(first, since: first, interval: 1)
            }
            let interval = 0.5
            Thread.sleep(forTimeInterval: interval)
            return rows(try snapshots(), since: first, interval: interval)
        }
    }

    /// `--watch`: the table again and again until no task is left running or waiting.
    struct Watch {
        let listing: Listing

        func run() throws {
            let live = isatty(STDOUT_FILENO) == 1
            let interval = live ? 0.5 : 2
            var previous = try listing.snapshots()
            var drawnLines = 0
            while true {
                Thread.sleep(forTimeInterval: interval)
                let now = try listing.snapshots()
                let text = Tasks.table(listing.rows(now, since: previous, interval: interval), bars: true)
                if live {
                    // Back to the top of the last drawing, and clear below.
                    let up = drawnLines > 0 ? "\u{1B}[\(drawnLines)F\u{1B}[J" : ""
                    FileHandle.standardOutput.write(Data((up + text + "\n").utf8))
                    drawnLines = text.split(separator: "\n", omittingEmptySubsequences: false).count
                } else {
                    FileHandle.standardOutput.write(Data((text + "\n\n").utf8))
                }
                previous = now
                if !now.contains(where: { $0.1.state != SessionTask.State.completed.rawValue }) {
                    FileHandle.standardOutput.write(Data("no task is running or waiting\n".utf8))
                    return
                }
            }
        }
    }
}

extension Tasks {
    /// `--watch --json`: a line per task each time its snapshot changed, for programs that follow courierd.
    struct JSONWatch {
        let listing: Listing
        /// Whether the first lines include the tasks that had ended already (`--all`).
        let includesEndedAtStart: Bool

        func run() throws {
            let interval = 0.5
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var previous = try listing.snapshots()
            var emitted: [String: IPCMessage.TaskSnapshot] = [:]
            if !includesEndedAtStart {
                for (session, task) in previous where task.state == SessionTask.State.completed.rawValue {
                    emitted["\(session)#\(task.identifier)"] = task
                }
            }
            var first = true
            while true {
                let now = first ? previous : try listing.snapshots()
                for row in listing.rows(now, since: previous, interval: interval) {
                    let key = "\(row.session)#\(row.task.identifier)"
                    guard emitted[key] != row.task else {
                        continue
                    }
                    emitted[key] = row.task
                    FileHandle.standardOutput.write(try encoder.encode(row) + Data("\n".utf8))
                }
                previous = now
                first = false
                if !now.contains(where: { $0.1.state != SessionTask.State.completed.rawValue }) {
                    return
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
    }
}
