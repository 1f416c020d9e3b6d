package import Courier
import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Relaunches apps whose background sessions have events nobody is connected to hear (docs/background-model.md
/// #8): the app's registered command, with `COURIER_BACKGROUND_LAUNCH=urlsession:<identifier>` so that its
/// `Application` starts in the background and calls `handleEventsForBackgroundURLSession`.
///
/// At most one launch per app is in flight: an app still running from an earlier launch is not started again.
/// Launches are paced by the ``ResumeRateLimiter``: the first one at once, each later one after a doubling delay.
/// None comes before ``reconnectionGrace`` has passed since courierd began to accept connections (``accepting(at:)``;
/// its journal may take seconds to restore before that): an app that was connected to the courierd before this one
/// reconnects by itself (its session outlives a restart) and must not be launched twice.
package final class AppLauncher: Sendable {
    /// How long after courierd's start the apps connected to the earlier courierd have to reconnect.
    package static let reconnectionGrace: TimeInterval = 3

    private struct State {
        var limiter: ResumeRateLimiter
        /// When relaunches may begin: ``reconnectionGrace`` after courierd began to accept connections (nil until
        /// it has).
        var firstLaunch: Date?
        /// The launches asked for before courierd began to accept connections, made from then.
        var awaitingAccept: [Launch] = []
        /// The process of each app's last launch.
        var launched: [String: pid_t] = [:]
        /// Apps whose launch waits for the limiter.
        var scheduled: Set<String> = []
    }

    private struct Launch {
        var app: String
        var session: String
        var command: [String]
        var stillNeeded: @Sendable () -> Bool
    }

    private let state: LockedValue<State>
    private let logger: Logger
    /// Where each launched app's standard output and error go (``DaemonPaths/appLog(of:)``); nil: courierd's own.
    private let paths: DaemonPaths?

    package init(limiter: ResumeRateLimiter, logger: Logger, paths: DaemonPaths? = nil) {
        state = LockedValue(State(limiter: limiter))
        self.logger = logger
        self.paths = paths
    }

    /// courierd accepts connections from `now`: the apps of the courierd before it have the grace from then.
    package func accepting(at now: Date = Date()) {
        let firstLaunch = now.addingTimeInterval(Self.reconnectionGrace)
        let waiting = state.withLock { state -> [(Launch, Date)] in
            state.firstLaunch = max(state.firstLaunch ?? firstLaunch, firstLaunch)
            defer { state.awaitingAccept = [] }
            return state.awaitingAccept.map { asked in
                (asked, max(state.limiter.earliestWake(of: asked.app, now: now), firstLaunch))
            }
        }
        for (asked, when) in waiting {
            launch(
                app: asked.app,
                session: asked.session,
                command: asked.command,
                at: when,
                stillNeeded: asked.stillNeeded
            )
        }
    }

    /// Launches `app` for `session` now or when the limiter allows, unless a launch is already pending or running;
    /// `stillNeeded` is asked again right before the launch (the app may have come back on its own meanwhile).
    package func wake(
        app: String,
        session: String,
        command: [String],
        stillNeeded: @escaping @Sendable () -> Bool
    ) {
        let now = Date()
        let when = state.withLock { state -> Date? in
            if let pid = state.launched[app], kill(pid, 0) == 0 {
                return nil
            }
            guard !state.scheduled.contains(app) else {
                return nil
            }
            state.scheduled.insert(app)
            guard let firstLaunch = state.firstLaunch else {
                state.awaitingAccept.append(
                    Launch(app: app, session: session, command: command, stillNeeded: stillNeeded)
                )
                return nil
            }
            return max(state.limiter.earliestWake(of: app, now: now), firstLaunch)
        }
        guard let when else {
            return
        }
        launch(app: app, session: session, command: command, at: when, stillNeeded: stillNeeded)
    }

    /// Launches `app` at `when`, or later when courierd's grace was moved past it meanwhile (``accepting(at:)``: a
    /// wake made while the journal was restored), if `stillNeeded` says so then.
    private func launch(
        app: String,
        session: String,
        command: [String],
        at when: Date,
        stillNeeded: @escaping @Sendable () -> Bool
    ) {
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, when.timeIntervalSinceNow)) { [self] in
            if let postponed = state.withLock({ state in state.firstLaunch.flatMap { $0 > Date() ? $0 : nil } }) {
                launch(app: app, session: session, command: command, at: postponed, stillNeeded: stillNeeded)
                return
            }
            // `app` stays scheduled until its process is recorded (or no launch is made): a wake meanwhile must not
            // find it neither scheduled nor launched and start a second process.
            defer { state.withLock { _ = $0.scheduled.remove(app) } }
            guard stillNeeded() else {
                return
            }
            launch(app: app, session: session, command: command)
        }
    }

    /// The earliest time the limiter lets courierd wake `app` (now or later).
    package func earliestWake(of app: String, now: Date) -> Date {
        state.withLock { $0.limiter.earliestWake(of: app, now: now) }
    }

    /// The user brought `app` to the foreground: its next relaunch may come at once.
    package func appCameToForeground(_ app: String) {
        state.withLock { $0.limiter.appCameToForeground(app) }
    }

    /// Whether the process of `app`'s last launch still runs.
    package func launchedProcessRuns(_ app: String) -> Bool {
        state.withLock { state in state.launched[app].map { kill($0, 0) == 0 } ?? false }
    }

    /// Launches `app` at once for background work (`COURIER_BACKGROUND_LAUNCH=reason`, plus `environment`), unless the
    /// process of an earlier launch still runs. Returns the new process, or nil (running already, or not spawned).
    package func launchForWork(
        app: String,
        command: [String],
        reason: String,
        environment: [String: String] = [:]
    ) -> pid_t? {
        guard !launchedProcessRuns(app) else {
            return nil
        }
        return spawn(app: app, command: command, reason: reason, environment: environment)
    }

    private func launch(app: String, session: String, command: [String]) {
        if let pid = spawn(app: app, command: command, reason: "urlsession:\(session)") {
            state.withLock { $0.limiter.recordWake(of: app, at: Date()) }
            logger.info(
                "relaunched the app for its background session",
                metadata: ["app": "\(app)", "session": "\(session)", "pid": "\(pid)"]
            )
        }
    }

    /// Starts `command` with `COURIER_BACKGROUND_LAUNCH=reason`, its standard output and error appended to the app's
    /// log after a line that says when and why; records the process as `app`'s last launch.
    private func spawn(app: String, command: [String], reason: String, environment extra: [String: String] = [:]) -> pid_t? {
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["COURIER_BACKGROUND_LAUNCH"] = reason
        let log = openLog(of: app)
        defer {
            if let log {
                close(log)
            }
        }
        if let log {
            let line = "--- \(ISO8601DateFormatter().string(from: Date())) courierd launched \(command) for \(reason)\n"
            _ = line.withCString { write(log, $0, strlen($0)) }
        }
        switch ProcessSpawner.spawn(command, environment: environment, standardOutput: log, standardError: log) {
        case .success(let pid):
            state.withLock { $0.launched[app] = pid }
            return pid
        case .failure(let error):
            logger.error(
                "cannot launch the app",
                metadata: [
                    "app": "\(app)", "reason": "\(reason)", "command": "\(command)",
                    "error": "\(error.localizedDescription)",
                ]
            )
            return nil
        }
    }

    /// `app`'s log, opened for appending (made private to the user), or nil without one.
    private func openLog(of app: String) -> Int32? {
        guard let paths else {
            return nil
        }
        try? FileManager.default.createDirectory(
            at: paths.appLogs,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        let descriptor = open(paths.appLog(of: app).path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            logger.warning("cannot open the app's log", metadata: ["app": "\(app)", "errno": "\(errno)"])
            return nil
        }
        return descriptor
    }
}
