package import Courier
import CourierConcurrency
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Background fetch and remote notifications, courierd's side (docs/lifecycle.md, docs/background-model.md #14, #15):
/// apps register (device token, fetch interval), the ``FetchScheduler`` says when to fetch, pushes are checked and
/// paced by the ``PushBudget``, and each piece of work is delivered the way the app can take it:
/// - connected and running: a `wake` message at once;
/// - connected but stopped (suspended by its lifecycle): the `wake` message, then SIGCONT — the app sees the signal
///   came from courierd and stays in the background;
/// - not running: launched with `COURIER_BACKGROUND_LAUNCH=fetch` or `remote-notification` (the payload in
///   `COURIER_REMOTE_NOTIFICATION`).
///
/// Each delivery ends with the app's `wakeCompleted`, or, when none comes within ``handlerTimeLimit`` and a grace
/// period, is recorded as an overrun. The scheduler's state is journaled after every change.
///
/// Thread-safe: all state is behind one lock; messages are sent and processes spawned outside it.
package final class BackgroundWorkService: Sendable {
    /// A registered app's live connection.
    struct Link {
        let connection: Int32
        let pid: pid_t
        let send: @Sendable (IPCMessage) -> Bool
        /// Fetching an app the user is looking at is pointless: it is not fetched then.
        var inForeground: Bool
        /// Continues the process when its lifecycle said it suspended it, once what was sent is in its socket.
        let continueIfSuspended: @Sendable () -> Void
    }

    /// A delivery the app has not finished.
    struct InFlight {
        let app: String
        let work: IPCMessage.WakeCompleted.Work
        let started: Date
        /// Set for a delivery by launch: the app reports it without the wake's number.
        var byLaunch: Bool
    }

    struct State {
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
    static let grace: TimeInterval = 15

    let journal: Journal
    let launcher: AppLauncher
    let notifier: DesktopNotifier?
    let logger: Logger
    let queue = DispatchQueue(label: "courierd.background-work")
    let state: LockedValue<State>

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
            // Kept in memory only (as APNs keeps one per device while it is off): gone with this courierd.
            state.budget.dropWaiting()
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
        send: @escaping @Sendable (IPCMessage) -> Bool,
        continueIfSuspended: @escaping @Sendable () -> Void
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
            state.links[app] = Link(
                connection: connection,
                pid: pid,
                send: send,
                inForeground: inForeground,
                continueIfSuspended: continueIfSuspended
            )
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

    // MARK: What courierd tells

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

    func save(_ scheduler: FetchScheduler) {
        do {
            try journal.saveFetchScheduler(scheduler)
        } catch {
            logger.error("fetch schedule not journaled", metadata: ["error": "\(error)"])
        }
    }
}
