import ArgumentParser
import Courier
import Foundation

/// `courier sessions`: the background sessions courierd keeps.
struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the background sessions courierd keeps: app, connected or not, active tasks, pending events."
    )

    @Flag(help: "Print JSON for scripts instead of a table.")
    var json = false

    func run() throws {
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        guard case .sessions(let sessions) = try DaemonClient.request(connection, { .listSessions(.init(request: $0)) })
        else {
            throw CommandFailure(description: "courierd answered something else than a session list")
        }
        if json {
            print(try DaemonClient.json(sessions))
            return
        }
        let rows = sessions.map { session in
            [
                session.identifier, session.app, session.connected ? "yes" : "no", "\(session.activeTasks)",
                "\(session.pendingEvents)",
            ]
        }
        print(DaemonClient.table(["SESSION", "APP", "CONNECTED", "ACTIVE TASKS", "PENDING EVENTS"], rows))
    }
}

/// `courier cancel SESSION TASK`.
struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a background task; its app hears didCompleteWithError(cancelled)."
    )

    @Argument(help: "The session identifier.")
    var session: String

    @Argument(help: "The task identifier (see `courier tasks`).")
    var task: Int

    func run() throws {
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        _ = try DaemonClient.request(connection) {
            .command(.init(request: $0, session: session, task: task, verb: .cancel))
        }
        print("cancelled task \(task) of \(session)")
    }
}

/// `courier kill APP`: the user's force-quit.
struct Kill: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Force-quit an app: its background tasks are cancelled, its suspended instances end, and courierd does "
            + "not relaunch it.",
        discussion: "The app is relaunched for background events again once it has been started by hand."
    )

    @Argument(help: "The app's name (the APP column of `courier sessions`).")
    var app: String

    func run() throws {
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        _ = try DaemonClient.request(connection) { .forceQuit(.init(request: $0, app: app)) }
        print("force-quit \(app): its background tasks are cancelled")
    }
}

/// `courier daemon status|stop|start|install|uninstall`.
struct Daemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask courierd how it is, start or stop it, install it as a user service.",
        subcommands: [Status.self, Stop.self, Start.self, Install.self, Uninstall.self]
    )

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Whether courierd runs, where, and what it keeps.")

        @Flag(help: "Print JSON for scripts.")
        var json = false

        struct Report: Encodable {
            var running: Bool
            var socket: String
            var pid: Int32?
            var version: String?
            var executable: String?
            var runtimeDirectory: String?
            var stateDirectory: String?
            var startedAt: Date?
            var uptimeSeconds: Int?
            var sessions: Int
            var activeTasks: Int
            var pendingEvents: Int
            /// Since courierd started: bytes, tasks ended by outcome, failures by code, retries; and its tasks by
            /// state and transfers now.
            var figures: DaemonFigures?
        }

        func run() throws {
            let paths = DaemonPaths.current
            var report = Report(running: false, socket: paths.socket.path, sessions: 0, activeTasks: 0, pendingEvents: 0)
            if let connection = try? DaemonClient.connect(startingDaemon: false) {
                defer { connection.close() }
                report.running = true
                if case .sessions(let sessions) = try DaemonClient.request(connection, { .listSessions(.init(request: $0)) }) {
                    report.sessions = sessions.count
                    report.activeTasks = sessions.reduce(0) { $0 + $1.activeTasks }
                    report.pendingEvents = sessions.reduce(0) { $0 + $1.pendingEvents }
                }
                // The welcome came before the answer.
                let welcome = connection.welcome
                report.pid = welcome?.pid ?? connection.peer?.pid
                report.version = welcome?.daemonVersion
                report.executable = welcome?.executable
                report.runtimeDirectory = welcome?.runtimeDirectory
                report.stateDirectory = welcome?.stateDirectory
                report.startedAt = welcome?.startedAt
                report.uptimeSeconds = welcome?.startedAt.map { Int(Date().timeIntervalSince($0)) }
                report.figures = welcome?.figures
            }
            if json {
                print(try DaemonClient.json(report))
            } else if report.running {
                let version = report.version ?? "(version unknown)"
                print("courierd \(version) is running, pid \(report.pid.map(String.init) ?? "?")")
                print("  binary:    \(report.executable ?? "?")")
                print("  socket:    \(report.socket)")
                print("  runtime:   \(report.runtimeDirectory ?? "?")")
                print("  state:     \(report.stateDirectory ?? "?")")
                print("  uptime:    \(report.uptimeSeconds.map { Formatting.seconds(Double($0)) } ?? "?")")
                print(
                    "  \(Formatting.count(report.sessions, "session")), "
                        + "\(Formatting.count(report.activeTasks, "active task")), "
                        + "\(Formatting.count(report.pendingEvents, "pending event"))"
                )
                if let figures = report.figures {
                    let ended = figures.completed.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
                    print(
                        "  since start: \(Formatting.bytes(figures.bytesReceived)) received, "
                            + "\(Formatting.bytes(figures.bytesSent)) sent, tasks ended: "
                            + (ended.isEmpty ? "none" : ended.joined(separator: ", ")) + ", \(figures.retries) retries"
                    )
                    if !figures.failures.isEmpty {
                        let failures = figures.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                        print("  failures:  " + failures.joined(separator: ", "))
                    }
                    print(
                        "  transfers: \(figures.runningTransfers) running, "
                            + "\(figures.waitingTransfers) waiting for a slot"
                    )
                }
            } else {
                print("courierd is not running (no answer at \(report.socket)): \(DaemonClient.startHint)")
            }
            if !report.running {
                throw ExitCode(3)
            }
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop courierd; running downloads resume from their bytes on disk when it starts again."
        )

        func run() throws {
            guard let connection = try? DaemonClient.connect(startingDaemon: false) else {
                print("courierd is not running")
                return
            }
            defer { connection.close() }
            _ = try DaemonClient.request(connection) { .stopDaemon(.init(request: $0)) }
            print("courierd is stopping")
        }
    }
}
