import Courier
import CourierConcurrency

/// courierd's background sessions: the runner of every journaled session, and which connection holds each open one
/// (one live session per identifier). Thread-safe; its lock is never held while a runner works.
final class SessionRegistry: Sendable {
    private struct State {
        var runners: [String: BackgroundSessionRunner] = [:]
        /// The descriptor of the connection that holds each open session.
        var owners: [String: Int32] = [:]
    }

    private let state = LockedValue(State())

    /// The runner of `session`, if it is journaled.
    func runner(_ session: String) -> BackgroundSessionRunner? {
        state.withLock { $0.runners[session] }
    }

    /// The runner of `configuration`'s session, told of the configuration when there is one already, else made by
    /// `make` and kept.
    func runner(
        for configuration: IPCMessage.OpenSession,
        make: () -> BackgroundSessionRunner
    ) -> BackgroundSessionRunner {
        state.withLock { state in
            if let runner = state.runners[configuration.identifier] {
                runner.update(configuration)
                return runner
            }
            let runner = make()
            state.runners[configuration.identifier] = runner
            return runner
        }
    }

    /// Every runner, as they are now.
    var runners: [BackgroundSessionRunner] {
        state.withLock { Array($0.runners.values) }
    }

    /// Every runner, and none kept any more (courierd is stopping).
    func removeAllRunners() -> [BackgroundSessionRunner] {
        state.withLock { state in
            defer { state.runners = [:] }
            return Array(state.runners.values)
        }
    }

    /// Makes `connection` the holder of `session`; false when another live connection holds it. A holder whose peer
    /// hung up (an app killed a moment ago, its connection not yet reaped) holds nothing.
    func claim(_ session: String, for connection: Int32) -> Bool {
        state.withLock { state in
            if let owner = state.owners[session], owner != connection, !UnixSocket.peerHungUp(owner) {
                return false
            }
            state.owners[session] = connection
            return true
        }
    }

    /// The connection that holds `session`, if one does.
    func holder(of session: String) -> Int32? {
        state.withLock { $0.owners[session] }
    }

    /// `connection` no longer holds `session`; returns its runner when it did.
    @discardableResult
    func release(_ session: String, by connection: Int32) -> BackgroundSessionRunner? {
        state.withLock { state in
            guard state.owners[session] == connection else {
                return nil
            }
            state.owners[session] = nil
            return state.runners[session]
        }
    }

    /// Releases every session `connection` holds (it closed) and detaches their runners from it; returns them.
    func releaseAll(heldBy connection: Int32) -> [String] {
        let held = state.withLock { state -> [(String, BackgroundSessionRunner?)] in
            let held = state.owners.filter { $0.value == connection }.map(\.key)
            for session in held {
                state.owners[session] = nil
            }
            return held.map { ($0, state.runners[$0]) }
        }
        for (_, runner) in held {
            runner?.detach(owner: connection)
        }
        return held.map(\.0)
    }

    /// The runner of `session` when `connection` holds it.
    func runner(_ session: String, heldBy connection: Int32) -> BackgroundSessionRunner? {
        state.withLock { state in
            state.owners[session] == connection ? state.runners[session] : nil
        }
    }

    /// The sessions `connection` holds.
    func held(by connection: Int32) -> [String] {
        state.withLock { state in state.owners.filter { $0.value == connection }.map(\.key) }
    }

    /// Whether a connection holds `session`.
    func isHeld(_ session: String) -> Bool {
        state.withLock { $0.owners[session] != nil }
    }

    /// The identifiers of the sessions a connection holds.
    var heldSessions: Set<String> {
        state.withLock { Set($0.owners.keys) }
    }
}
