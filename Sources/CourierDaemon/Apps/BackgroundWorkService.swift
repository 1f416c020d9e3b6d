package import Courier
import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Background fetch and remote notifications, courierd's side (DESIGN.md §6, background-behaviours.md #14, #15):
/// apps register (device token, fetch interval), the ``FetchScheduler`` says when to fetch, pushes are checked and
/// paced by the ``PushBudget``, and each piece of work is delivered the way the app can take it:
/// - connected and running: a `wake` message at once;
/// - connected but stopped (suspended by its lifecycle): the `wake` message, then SIGCONT — the app asks whether the
///   continue was courierd's (`continued`) and stays in the background;
/// - not running: launched with `COURIER_BACKGROUND_LAUNCH=fetch` or `remote-notification` (the payload in
///   `COURIER_REMOTE_NOTIFICATION`).
///
/// Each delivery ends with the app's `wakeCompleted`, or, when none comes within ``handlerTimeLimit`` and a grace
/// period, is recorded as an overrun. The scheduler's state is journaled after every change.
///
/// Thread-safe: all state is behind one lock; messages are sent and processes spawned outside it.
package final class BackgroundWorkService: Sendable {
    /// A registered app's live connection.
    private struct Link {
        let connection: Int32
        let pid: pid_t
        let send: @Sendable (IPCMessage) -> Bool
        /// Fetching an app the user is looking at is pointless: it is not fetched then.
        var inForeground: Bool
        /// courierd sent SIGCONT to resume the app for a wake and the app has not asked about it yet.
        var continuedForWork = false
    }

    /// A delivery the app has not finished.
    private struct InFlight {
        let app: String
        let work: IPCMessage.WakeCompleted.Work
        let started: Date
        /// Set for a delivery by launch: the app reports it without the wake's number.
        let byLaunch: Bool
    }

    private struct State {
        var scheduler: FetchScheduler
        var budget: PushBudget
        var links: [String: Link] = [:]
        var inFlight: [UInt64: InFlight] = [:]
        var nextWake: UInt64 = 1
        /// Wakes for apps launched but not yet registered, sent when they register.
        var pending: [String: [IPCMessage.Wake]] = [:]
        /// Bumped at every re-arming: a timer whose generation is not the current one does nothing.
        var timerGeneration: UInt64 = 0
        var stopped = false

        /// Apps not to wake for a fetch now: one is under way, or the app is in the foreground.
        var notToFetch: Set<String> {
            Set(inFlight.values.filter { $0.work == .fetch }.map(\.app))
                .union(links.filter { $0.value.inForeground }.map(\.key))
        }
    }

    /// How long an app's fetch or push handler may take before courierd counts an overrun (the app's own limit is
    /// 30 s; this adds a grace period for the report to arrive, and for a launch).
    package static let handlerTimeLimit: TimeInterval = 30
    private static let grace: TimeInterval = 15

    private let journal: Journal
    private let launcher: AppLauncher
    private let notifier: DesktopNotifier?
    private let logger: Logger
    private let queue = DispatchQueue(label: "courierd.background-work")
    private let state: LockedValue<State>

    package init(
        journal: Journal,
        launcher: AppLauncher,
        notifier: DesktopNotifier?,
        fetchPolicy: FetchScheduler.Policy = FetchScheduler.Policy(),
        pushBudget: PushBudget = PushBudget(),
        logger: Logger
    ) {
        var scheduler = (try? journal.fetchScheduler()) ?? FetchScheduler(policy: fetchPolicy)
        scheduler.policy = fetchPolicy
        for registration in (try? journal.registrations()) ?? [] {
            scheduler.setMinimumInterval(registration.fetchInterval, of: registration.app)
        }
        state = LockedValue(State(scheduler: scheduler, budget: pushBudget))
        self.journal = journal
        self.launcher = launcher
        self.notifier = notifier
        self.logger = logger
        rearm()
    }

    /// No more wakes: the timers do nothing from now on.
    package func stop() {
        state.withLock { state in
            state.stopped = true
            state.timerGeneration += 1
        }
    }

    // MARK: What apps say

    /// `registerApp` on `connection`: journals the registration, keeps the connection for wakes, and answers the
    /// device token when the app asked for remote notifications.
    package func register(
        _ registration: IPCMessage.RegisterApp,
        app: String,
        pid: pid_t,
        connection: Int32,
        inForeground: Bool,
        send: @escaping @Sendable (IPCMessage) -> Bool
    ) -> Result<String?, JournalError> {
        let token: String
        do {
            token = try journal.register(
                app,
                fetchInterval: registration.fetchInterval,
                remoteNotifications: registration.remoteNotifications
            )
        } catch {
            return .failure(error)
        }
        let (scheduler, pending) = state.withLock { state in
            state.links[app] = Link(connection: connection, pid: pid, send: send, inForeground: inForeground)
            state.scheduler.setMinimumInterval(registration.fetchInterval, of: app, at: Date())
            return (state.scheduler, state.pending.removeValue(forKey: app) ?? [])
        }
        save(scheduler)
        for wake in pending {
            _ = send(.wake(wake))
        }
        logger.info(
            "app registered for background work",
            metadata: [
                "app": "\(app)", "fetchInterval": "\(registration.fetchInterval.map { "\($0)" } ?? "never")",
                "remoteNotifications": "\(registration.remoteNotifications)",
            ]
        )
        rearm()
        return .success(registration.remoteNotifications ? token : nil)
    }

    /// The app on `connection` says where it stands; coming to the foreground (a launch by the user, or SIGCONT) is
    /// a use the scheduler learns from.
    package func appState(_ app: String, connection: Int32, inForeground: Bool, cameToForeground: Bool, at date: Date = Date()) {
        let scheduler = state.withLock { state -> FetchScheduler? in
            if state.links[app]?.connection == connection {
                state.links[app]?.inForeground = inForeground
            }
            guard cameToForeground, state.scheduler.apps[app] != nil else {
                return nil
            }
            state.scheduler.recordForeground(of: app, at: date)
            return state.scheduler
        }
        if let scheduler {
            save(scheduler)
        }
        rearm()
    }

    /// The connection closed: wakes go by launch from now on.
    package func disconnected(_ connection: Int32) {
        state.withLock { state in
            state.links = state.links.filter { $0.value.connection != connection }
        }
    }

    /// `continued`: whether courierd resumed the app on `connection` for a wake (asked once per SIGCONT).
    package func continued(_ connection: Int32) -> Bool {
        state.withLock { state in
            guard let (app, link) = state.links.first(where: { $0.value.connection == connection }) else {
                return false
            }
            state.links[app]?.continuedForWork = false
            return link.continuedForWork
        }
    }

    /// `wakeCompleted`: the app's handler finished (or overran).
    package func completed(_ report: IPCMessage.WakeCompleted, app: String, at now: Date = Date()) {
        let finished = state.withLock { state -> InFlight? in
            let number = report.wake ?? state.inFlight.first { $0.value.app == app && $0.value.byLaunch && $0.value.work == report.work }?.key
            guard let number, let flight = state.inFlight[number], flight.app == app else {
                return nil
            }
            state.inFlight[number] = nil
            return flight
        }
        guard let finished else {
            logger.notice("a wake's report matched no delivery", metadata: ["app": "\(app)", "wake": "\(report.wake.map { "\($0)" } ?? "launch")"])
            return
        }
        let outcome = report.result.flatMap(FetchScheduler.Outcome.init(rawValue:)) ?? .overrun
        end(finished, outcome: outcome, duration: report.duration, bytes: report.bytes, at: now)
    }

    // MARK: Pushes

    /// A push for a device token, from the socket or the HTTP endpoint: checked, then shown (an alert), delivered,
    /// coalesced or queued (a silent one). Answered as APNs answers.
    package func push(_ push: IPCMessage.SendPush, at now: Date = Date()) -> IPCMessage.PushReceipt {
        let registration: Journal.AppRegistration?
        do {
            registration = try journal.app(withDeviceToken: push.deviceToken)
        } catch {
            return IPCMessage.PushReceipt(status: 500, reason: "InternalServerError", detail: "\(error)")
        }
        guard DeviceToken.data(fromHex: push.deviceToken) != nil, let registration else {
            return IPCMessage.PushReceipt(
                status: 400,
                reason: "BadDeviceToken",
                detail: "no app registered for remote notifications with device token \(push.deviceToken)"
            )
        }
        guard registration.remoteNotifications else {
            return IPCMessage.PushReceipt(
                status: 410,
                reason: "Unregistered",
                detail: "\(registration.app) is not registered for remote notifications"
            )
        }
        let notification: PushNotification
        switch PushNotification.parse(push.payload, pushType: push.pushType, priority: push.priority.map(String.init)) {
        case .success(let parsed):
            notification = parsed
        case .failure(let error):
            return IPCMessage.PushReceipt(status: error.status, reason: error.reason, detail: error.message)
        }
        let id = UUID().uuidString
        var disposition = "shown"
        if notification.kind == .alert {
            if let notifier {
                notifier.notify(summary: notification.alertTitle ?? registration.app, body: notification.alertBody ?? "")
            } else {
                disposition = "not shown (no desktop)"
            }
        }
        if notification.contentAvailable {
            let decision = state.withLock { $0.budget.offer(notification, to: registration.app, at: now) }
            switch decision {
            case .deliver:
                disposition = "delivered"
                deliver(.remoteNotification(payload: notification.payload, pushes: 1), to: registration.app, at: now)
            case .coalesced:
                disposition = "coalesced"
            case .queued:
                disposition = "queued"
                rearm()
            }
        }
        logger.info("push", metadata: ["app": "\(registration.app)", "id": "\(id)", "disposition": "\(disposition)"])
        return IPCMessage.PushReceipt(status: 200, id: id, disposition: disposition)
    }

    // MARK: Fetches

    /// `courier fetch simulate` (wake the app now, launching it if it is not running) or `courier fetch launch`
    /// (launch it; refused while it runs). Nil when started, else why not.
    package func triggerFetch(_ app: String, launch: Bool, at now: Date = Date()) -> CourierError? {
        let connected = state.withLock { $0.links[app] != nil }
        if launch && connected {
            return CourierError(.unknown, "\(app) is running; `courier fetch simulate \(app)` wakes it for a fetch")
        }
        guard connected || ((try? journal.launchCommand(of: app)) ?? nil) != nil else {
            return CourierError(.unknown, "\(app) is not running and courierd has no command that launches it")
        }
        deliver(.fetch, to: app, at: now)
        return nil
    }

    /// The registered apps with what the scheduler knows of each (`courier apps`).
    package func apps(at now: Date = Date()) -> [IPCMessage.AppSummary] {
        let registrations = (try? journal.registrations()) ?? []
        let (scheduler, links) = state.withLock { ($0.scheduler, $0.links) }
        return registrations.map { registration in
            let next = scheduler.nextFetch(of: registration.app, after: now)
            return IPCMessage.AppSummary(
                app: registration.app,
                running: links[registration.app] != nil,
                deviceToken: registration.remoteNotifications ? registration.deviceToken : nil,
                fetchInterval: registration.fetchInterval,
                effectiveInterval: scheduler.effectiveInterval(of: registration.app),
                nextFetch: next?.date,
                nextFetchReason: next?.reason,
                lastFetches: (scheduler.apps[registration.app]?.fetches ?? []).suffix(5).map {
                    .init(at: $0.at, duration: $0.duration, bytes: $0.bytes, outcome: $0.outcome.rawValue)
                }
            )
        }
    }

    // MARK: Delivering

    /// Hands `reason` to `app`: by message when it is connected (resuming it first when it is stopped), else by
    /// launching it.
    private func deliver(_ reason: IPCMessage.Wake.Reason, to app: String, at now: Date) {
        let work: IPCMessage.WakeCompleted.Work = if case .fetch = reason { .fetch } else { .remoteNotification }
        let (number, link) = state.withLock { state -> (UInt64, Link?) in
            let number = state.nextWake
            state.nextWake += 1
            let link = state.links[app]
            state.inFlight[number] = InFlight(app: app, work: work, started: now, byLaunch: link == nil)
            return (number, link)
        }
        var delivered = false
        if let link {
            delivered = link.send(.wake(.init(wake: number, reason: reason)))
            if delivered {
                resumeWhileStopped(app, pid: link.pid, until: number)
            }
        }
        if !delivered, launcher.launchedProcessRuns(app) {
            // Launched a moment ago (for other work) and not registered yet: the wake goes when it registers.
            state.withLock { state in
                state.inFlight[number] = InFlight(app: app, work: work, started: now, byLaunch: false)
                state.pending[app, default: []].append(IPCMessage.Wake(wake: number, reason: reason))
            }
            delivered = true
        } else if !delivered {
            delivered = launch(app, for: reason)
            if delivered, link != nil {
                // The link was stale (the app died): the launched app reports without the wake's number.
                state.withLock { state in
                    state.inFlight[number] = InFlight(app: app, work: work, started: now, byLaunch: true)
                }
            }
        }
        logger.info(
            "background work",
            metadata: ["app": "\(app)", "work": "\(work.rawValue)", "wake": "\(number)", "delivered": "\(delivered)"]
        )
        guard delivered else {
            let flight = state.withLock { $0.inFlight.removeValue(forKey: number) }
            if let flight {
                end(flight, outcome: .failed, duration: 0, bytes: 0, at: now)
            }
            return
        }
        queue.asyncAfter(deadline: .now() + Self.handlerTimeLimit + Self.grace) { [weak self] in
            self?.overran(number)
        }
    }

    /// Resumes the app (SIGCONT, marked as courierd's) whenever it is found stopped until wake `number` has ended:
    /// the wake may have arrived while its lifecycle was suspending it, after the first look.
    private func resumeWhileStopped(_ app: String, pid: pid_t, until number: UInt64) {
        let resumed = state.withLock { state -> Bool in
            guard state.inFlight[number] != nil, state.links[app]?.pid == pid, Self.isStopped(pid) else {
                return false
            }
            // Marked before the signal: the app asks right after it is continued.
            state.links[app]?.continuedForWork = true
            kill(pid, SIGCONT)
            return true
        }
        if resumed {
            logger.info("resumed a suspended app for background work", metadata: ["app": "\(app)", "pid": "\(pid)"])
        }
        let stillInFlight = state.withLock { $0.inFlight[number] != nil && $0.links[app]?.pid == pid }
        if stillInFlight {
            queue.asyncAfter(deadline: .now() + 0.25) { [weak self] in
                self?.resumeWhileStopped(app, pid: pid, until: number)
            }
        }
    }

    /// Launches the app for `reason`; false when it cannot be (no launch command, force-quit, spawn failed, or a
    /// process of an earlier launch still runs and has not connected).
    private func launch(_ app: String, for reason: IPCMessage.Wake.Reason) -> Bool {
        guard let command = try? journal.launchCommand(of: app), !command.isEmpty else {
            return false
        }
        switch reason {
        case .fetch:
            return launcher.launchForWork(app: app, command: command, reason: "fetch") != nil
        case .remoteNotification(let payload, _):
            let environment = ["COURIER_REMOTE_NOTIFICATION": String(decoding: payload, as: UTF8.self)]
            return launcher.launchForWork(app: app, command: command, reason: "remote-notification", environment: environment)
                != nil
        }
    }

    private func overran(_ number: UInt64) {
        let flight = state.withLock { state in
            for (app, wakes) in state.pending {
                state.pending[app] = wakes.filter { $0.wake != number }
            }
            return state.inFlight.removeValue(forKey: number)
        }
        guard let flight else {
            return
        }
        logger.warning("no report of background work in time: an overrun", metadata: ["app": "\(flight.app)", "wake": "\(number)"])
        end(flight, outcome: .overrun, duration: Self.handlerTimeLimit, bytes: 0, at: Date())
    }

    /// Records how a delivery ended: a fetch in the scheduler, a push in the budget (a waiting push may go now).
    private func end(_ flight: InFlight, outcome: FetchScheduler.Outcome, duration: TimeInterval, bytes: Int64, at now: Date) {
        switch flight.work {
        case .fetch:
            let scheduler = state.withLock { state in
                state.scheduler.recordFetch(of: flight.app, at: flight.started, duration: duration, bytes: bytes, outcome: outcome)
                return state.scheduler
            }
            save(scheduler)
        case .remoteNotification:
            state.withLock { $0.budget.finished(flight.app, at: now) }
        }
        logger.info(
            "background work ended",
            metadata: [
                "app": "\(flight.app)", "work": "\(flight.work.rawValue)", "outcome": "\(outcome.rawValue)",
                "duration": "\(duration)", "bytes": "\(bytes)",
            ]
        )
        rearm()
    }

    // MARK: The timer

    /// Arms the one timer at the next due fetch or push, replacing the last.
    private func rearm() {
        let now = Date()
        let (generation, next) = state.withLock { state -> (UInt64, Date?) in
            state.timerGeneration += 1
            guard !state.stopped else {
                return (state.timerGeneration, nil)
            }
            let busy = state.notToFetch
            let fetch = state.scheduler.apps.keys.filter { !busy.contains($0) }
                .compactMap { state.scheduler.nextFetch(of: $0, after: now)?.date }.min()
            let push = state.budget.nextDue(after: now)
            return (state.timerGeneration, [fetch, push].compactMap { $0 }.min())
        }
        guard let next else {
            return
        }
        queue.asyncAfter(wallDeadline: .now() + max(0, next.timeIntervalSince(now))) { [weak self] in
            self?.timerFired(generation)
        }
    }

    /// Wakes every app whose fetch is due (batched: those due soon come along) and delivers the pushes the budget
    /// lets go.
    private func timerFired(_ generation: UInt64) {
        let now = Date()
        let work = state.withLock { state -> (fetches: [String], pushes: [(app: String, push: PushNotification, pushes: Int)])? in
            guard state.timerGeneration == generation, !state.stopped else {
                return nil
            }
            let busy = state.notToFetch
            return (state.scheduler.due(at: now).filter { !busy.contains($0) }, state.budget.takeDue(at: now))
        }
        guard let work else {
            return
        }
        for app in work.fetches {
            deliver(.fetch, to: app, at: now)
        }
        for due in work.pushes {
            deliver(.remoteNotification(payload: due.push.payload, pushes: due.pushes), to: due.app, at: now)
        }
        rearm()
    }

    private func save(_ scheduler: FetchScheduler) {
        do {
            try journal.saveFetchScheduler(scheduler)
        } catch {
            logger.error("fetch schedule not journaled", metadata: ["error": "\(error)"])
        }
    }

    /// Whether `pid` is stopped (`T` in `/proc/<pid>/stat`).
    private static func isStopped(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else {
            return false
        }
        let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
        return state == "T" || state == "t"
    }
}
