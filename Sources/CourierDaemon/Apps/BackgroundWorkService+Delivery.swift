package import Courier
import CourierConcurrency
package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Delivering work to apps (a wake, a resumed process, a launch), its end, and the timer that starts scheduled work.
extension BackgroundWorkService {
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

    /// Hands `reason` to `app`: by message when it is connected (resuming it first when it is stopped), else by
    /// launching it. False when it could not be handed over (not running and not launchable).
    @discardableResult
    func deliver(_ reason: IPCMessage.Wake.Reason, to app: String, at now: Date) -> Bool {
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
                // Suspended by its lifecycle: continued once the wake is in its socket, so that it knows courierd
                // continued it (and stays in the background), and stops again by itself when the work is done.
                link.continueIfSuspended()
            }
        }
        if !delivered, launcher.launchedProcessRuns(app) {
            // Launched a moment ago (for other work) and not registered yet: the wake goes when it registers.
            state.withLock { state in
                state.inFlight[number]?.byLaunch = false
                state.pending[app, default: []].append(IPCMessage.Wake(wake: number, reason: reason))
            }
            delivered = true
        } else if !delivered {
            // Also when the link was stale (the app died): the launched app reports without the wake's number.
            state.withLock { $0.inFlight[number]?.byLaunch = true }
            delivered = launch(app, for: reason)
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
            return false
        }
        queue.asyncAfter(deadline: .now() + Self.handlerTimeLimit + Self.grace) { [weak self] in
            self?.overran(number)
        }
        return true
    }

    /// Launches the app for `reason`; false when it cannot be (no launch command, force-quit, spawn failed, or a
    /// process of an earlier launch still runs and has not connected).
    func launch(_ app: String, for reason: IPCMessage.Wake.Reason) -> Bool {
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

    func overran(_ number: UInt64) {
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
    func end(_ flight: InFlight, outcome: FetchScheduler.Outcome, duration: TimeInterval, bytes: Int64, at now: Date) {
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
    func rearm() {
        let now = Date()
        let (generation, next) = state.withLock { state -> (UInt64, Date?) in
            state.timerGeneration += 1
            guard !state.stopped else {
                return (state.timerGeneration, nil)
            }
            let fetch = state.scheduler.nextWake(after: now, excluding: state.notToFetch)
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
    func timerFired(_ generation: UInt64) {
        let now = Date()
        let work = state.withLock { state -> (fetches: [String], pushes: [(app: String, push: PushNotification, pushes: Int)])? in
            guard state.timerGeneration == generation, !state.stopped else {
                return nil
            }
            return (state.scheduler.due(at: now, excluding: state.notToFetch), state.budget.takeDue(at: now))
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
}
