import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reclaiming a suspended instance of an app, as iOS reclaims a suspended app it needs no more: when the user starts
/// the app again, when the user force-quits it, and when it has stayed suspended with no work left.
extension DaemonServer {
    /// How long a reclaimed instance has to end after SIGTERM before SIGKILL.
    static let reclaimGrace: TimeInterval = 2

    /// How long a suspended instance with no work left stays before courierd reclaims it (`courierd
    /// --reclaim-idle-after`): long enough for the user to come back to it, short enough that nothing lingers for
    /// hours. Launching the app again costs little: courierd does it for the next events, fetch or push.
    package static let defaultIdleReclaimDelay: Double = 600

    /// Schedules the idle-reclaim check of `pid`, an instance whose lifecycle said it suspended it: one
    /// ``idleReclaimDelay`` after the suspension (``reclaimIfIdle(_:now:)``); nothing when one is scheduled already or
    /// instances are never reclaimed for being idle.
    func scheduleIdleReclaim(of pid: pid_t, after delay: TimeInterval? = nil) {
        guard let wait = delay ?? idleReclaimDelay,
            state.withLock({ !$0.stopping && $0.idleChecks.insert(pid).inserted })
        else {
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, wait)) { [weak self] in
            guard let self else {
                return
            }
            state.withLock { _ = $0.idleChecks.remove(pid) }
            reclaimIfIdle(pid, now: Date())
        }
    }

    /// Reclaims `pid` when it has been suspended (in the background and stopped) for ``idleReclaimDelay`` with no work
    /// left: none of the sessions it holds, on any of its connections (an app has one for its lifecycle and one per
    /// background session), has a task that has not ended or an event not acknowledged. Suspended since less long (it
    /// was continued and suspended again): looked at again when the delay is up. Suspended with work: looked at again
    /// one delay later (work ends while an instance is suspended only through events, and those continue it).
    func reclaimIfIdle(_ pid: pid_t, now: Date) {
        guard let delay = idleReclaimDelay else {
            return
        }
        let connections = state.withLock { $0.connections.values.filter { $0.pid == pid } }
        guard connections.allSatisfy({ $0.isSuspendedInstance(of: nil) }),
            let latest = connections.compactMap(\.suspendedSince).max()
        else {
            return
        }
        let suspendedFor = now.timeIntervalSince(latest)
        guard suspendedFor >= delay else {
            scheduleIdleReclaim(of: pid, after: delay - suspendedFor)
            return
        }
        guard !connections.contains(where: hasWork) else {
            scheduleIdleReclaim(of: pid)
            return
        }
        logger.info(
            "reclaiming a suspended instance with no work left",
            metadata: ["app": "\(connections.first?.app ?? "-")", "pid": "\(pid)", "idleFor": "\(suspendedFor)"]
        )
        _ = reclaim(connections)
    }

    /// Whether a session `connection` holds has a task that has not ended or an event not acknowledged yet.
    private func hasWork(_ connection: ClientConnection) -> Bool {
        sessions.held(by: connection.descriptor).contains { session in
            guard let activity = try? journal.activity(session: session) else {
                return true  // Unknown: not reclaimed.
            }
            return activity.activeTasks > 0 || activity.pendingEvents > 0
        }
    }

    /// The session `identifier` is held by another connection: when that is an instance of `app` that is suspended
    /// (in the background and stopped: relaunched for events it has delivered, or put in the background and idle), it
    /// is ended — SIGCONT and SIGTERM, SIGKILL after ``reclaimGrace`` — so that the instance the user starts now gets
    /// the session, as launching an iOS app resumes it instead of starting a second one. Returns whether the holder
    /// is gone.
    func reclaimSuspendedHolder(of identifier: String, for app: String) -> Bool {
        guard let descriptor = sessions.holder(of: identifier),
            let holder = state.withLock({ $0.connections[descriptor] }),
            holder.isSuspendedInstance(of: app)
        else {
            return false
        }
        logger.info(
            "reclaiming a suspended instance that holds the session",
            metadata: ["app": "\(app)", "pid": "\(holder.pid)", "session": "\(identifier)"]
        )
        return reclaim([holder])
    }

    /// The user force-quit `app` (`courier kill`): its suspended instances end too.
    func reclaimSuspendedInstances(of app: String) {
        let suspended = state.withLock { Array($0.connections.values) }.filter { $0.isSuspendedInstance(of: app) }
        if !suspended.isEmpty {
            logger.info("reclaiming suspended instances", metadata: ["app": "\(app)", "count": "\(suspended.count)"])
            _ = reclaim(suspended)
        }
    }

    /// Ends the processes of `instances`: SIGCONT and SIGTERM (the application terminates as it would on iOS), then
    /// SIGKILL for those whose connection is still open after ``reclaimGrace``. Returns whether every one is gone.
    private func reclaim(_ instances: [ClientConnection]) -> Bool {
        for instance in Dictionary(grouping: instances, by: \.pid).values.compactMap(\.first) {
            kill(instance.pid, SIGCONT)
            kill(instance.pid, SIGTERM)
        }
        if waitForHangUp(of: instances) {
            return true
        }
        let served = state.withLock { state in instances.filter { state.connections[$0.descriptor] === $0 } }
        for instance in Dictionary(grouping: served, by: \.pid).values.compactMap(\.first) {
            logger.notice("a reclaimed instance did not end in time: killed", metadata: ["pid": "\(instance.pid)"])
            kill(instance.pid, SIGKILL)
        }
        return waitForHangUp(of: instances)
    }

    /// Waits (at most ``reclaimGrace``) until no connection of `instances` is served any more: its reader saw the end
    /// and the connection was closed.
    private func waitForHangUp(of instances: [ClientConnection]) -> Bool {
        state.wait(atMost: Self.reclaimGrace) { state in
            instances.allSatisfy { state.connections[$0.descriptor] !== $0 }
        }
    }
}
