import CourierConcurrency
import CourierIPC
import Foundation

/// The application's link to courierd for background fetch and remote notifications: one connection per process, made
/// the first time the shared application needs it — when it asks for a fetch interval other than never, registers
/// for remote notifications, or was launched for a fetch or a push — that registers the app, receives the wakes
/// courierd sends and reports how each handler went.
///
/// A connection that ended (courierd restarted) is made again at the next registration or report, and the last
/// registration is sent again on it.
final class BackgroundServiceLink: Sendable {
    private struct Registration: Sendable, Equatable {
        var fetchInterval: BackgroundFetchInterval
        var remoteNotifications: Bool
    }

    private struct State {
        var connection: DaemonConnection?
        var registration: Registration?
        /// `TransferCounter.bytes` when each wake arrived.
        var bytesAtWake: [UInt64: Int64] = [:]
    }

    private weak let application: Application?
    private let paths: DaemonPaths
    private let state = LockedValue(State())

    private init(application: Application, paths: DaemonPaths) {
        self.application = application
        self.paths = paths
    }

    private static let shared = LockedValue<BackgroundServiceLink?>(nil)
    /// Held while the link is made, so that callers racing to make one wait for it (``existing`` does not wait:
    /// connecting may take a moment).
    private static let making = LockedValue(())

    /// The link of `application` (the shared one), made now (connecting to courierd, starting it when none runs) if it
    /// was not.
    static func link(for application: Application) -> BackgroundServiceLink {
        if let existing {
            return existing
        }
        return making.withLock { _ in
            if let existing {
                return existing
            }
            let made = BackgroundServiceLink(application: application, paths: DaemonPaths.current)
            _ = made.connection()
            shared.withLock { $0 = made }
            return made
        }
    }

    /// The link, if one was made.
    static var existing: BackgroundServiceLink? {
        shared.withLock { $0 }
    }

    /// The live connection, made (and the registration sent again) when there is none.
    private func connection() -> Result<DaemonConnection, CourierError> {
        if let live = state.withLock({ $0.connection }), !live.hasEnded {
            return .success(live)
        }
        let opened = DaemonConnection.open(
            paths: paths,
            app: DaemonConnection.appName,
            launchCommand: application?.configuration.resolvedLaunchCommand ?? Application.backgroundLaunchCommand
        )
        guard case .success(let connection) = opened else {
            return opened
        }
        connection.setWakeHandler { [weak self] wake in
            self?.wake(wake)
        }
        let registration = state.withLock { state in
            state.connection = connection
            return state.registration
        }
        if let registration {
            _ = register(registration, on: connection)
        }
        return .success(connection)
    }

    /// The fetch interval or the push registration changed: tell courierd. With `deliveringToken` (the app called
    /// `registerForRemoteNotifications()`), the device token or the failure goes to
    /// ``Application/didRegisterForRemoteNotifications(_:)``.
    func registrationChanged(
        fetchInterval: BackgroundFetchInterval,
        remoteNotifications: Bool,
        deliveringToken: Bool
    ) {
        let registration = Registration(fetchInterval: fetchInterval, remoteNotifications: remoteNotifications)
        state.withLock { $0.registration = registration }
        let answer = connection().flatMap { register(registration, on: $0) }
        guard deliveringToken, let application else {
            return
        }
        switch answer {
        case .success(let token?):
            application.didRegisterForRemoteNotifications(.success(token))
        case .success(nil):
            application.didRegisterForRemoteNotifications(
                .failure(CourierError(.badServerResponse, "courierd registered the app without a device token"))
            )
        case .failure(let error):
            application.didRegisterForRemoteNotifications(.failure(error))
        }
    }

    /// Sends the registration; returns the device token courierd answered with, if it gave one.
    private func register(
        _ registration: Registration,
        on connection: DaemonConnection
    ) -> Result<Data?, CourierError> {
        let answer = connection.request { number in
            .registerApp(
                .init(
                    request: number,
                    fetchInterval: registration.fetchInterval.seconds,
                    remoteNotifications: registration.remoteNotifications
                )
            )
        }
        switch answer {
        case .success(.registered(let token)):
            return .success(token.flatMap(DeviceToken.data(fromHex:)))
        case .success:
            return .failure(CourierError(.badServerResponse, "courierd answered a registration with something else"))
        case .failure(let error):
            return .failure(error)
        }
    }

    /// A fetch or push handler finished (or overran): tell courierd, which schedules the next one from it.
    func finished(_ work: BackgroundWork, report: BackgroundFetchReport) {
        let before = work.wake.flatMap { wake in state.withLock { $0.bytesAtWake.removeValue(forKey: wake) } } ?? 0
        let completed = IPCMessage.WakeCompleted(
            wake: work.wake,
            work: work.kind == .fetch ? .fetch : .remoteNotification,
            result: report.overran ? nil : report.result?.rawValue,
            duration: report.duration.inSeconds,
            bytes: TransferCounter.bytes - before
        )
        if case .success(let connection) = connection() {
            connection.send(.wakeCompleted(completed))
        }
    }

    /// courierd asks for background work: the application runs the handler (after leaving suspension).
    private func wake(_ wake: IPCMessage.Wake) {
        guard let application else {
            return
        }
        state.withLock { $0.bytesAtWake[wake.wake] = TransferCounter.bytes }
        let (kind, payload): (BackgroundWork.Kind, Data?) =
            switch wake.reason {
            case .fetch: (.fetch, nil)
            case .remoteNotification(let payload, _): (.remoteNotification, payload)
            }
        application.performBackgroundWork(BackgroundWork(kind: kind, wake: wake.wake), payload: payload)
    }
}
