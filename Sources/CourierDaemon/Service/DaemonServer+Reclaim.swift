import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reclaiming a suspended instance of an app, as iOS reclaims a suspended app it needs no more.
extension DaemonServer {
    /// How long a reclaimed instance has to end after SIGTERM before SIGKILL.
    static let reclaimGrace: TimeInterval = 2

    /// The session `identifier` is held by another connection: when that is an instance of `app` that is suspended
    /// (in the background and stopped: relaunched for events it has delivered, or put in the background and idle), it
    /// is ended — SIGCONT
    /// and SIGTERM, SIGKILL after ``reclaimGrace`` — so that the instance the user starts now gets the session, as
    /// launching an iOS app resumes it instead of starting a second one. Returns whether the holder is gone.
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
        for instance in instances {
            kill(instance.pid, SIGCONT)
            kill(instance.pid, SIGTERM)
        }
        if waitForHangUp(of: instances) {
            return true
        }
        for instance in instances where !isGone(instance) {
            logger.notice("a reclaimed instance did not end in time: killed", metadata: ["pid": "\(instance.pid)"])
            kill(instance.pid, SIGKILL)
        }
        return waitForHangUp(of: instances)
    }

    private func waitForHangUp(of instances: [ClientConnection]) -> Bool {
        let deadline = Date().addingTimeInterval(Self.reclaimGrace)
        while Date() < deadline {
            if instances.allSatisfy(isGone) {
                return true
            }
            usleep(20_000)
        }
        return instances.allSatisfy(isGone)
    }

    /// Whether `instance`'s connection ended: served no more (its descriptor closed, maybe reused since), or its
    /// peer hung up and the reader has not noticed yet.
    private func isGone(_ instance: ClientConnection) -> Bool {
        let served = state.withLock { $0.connections[instance.descriptor] === instance }
        return !served || UnixSocket.peerHungUp(instance.descriptor)
    }
}
