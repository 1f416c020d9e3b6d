public import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Application {
    /// Does what a user's force-quit from the app switcher does on iOS (docs/background-model.md #9): courierd
    /// cancels every background task of this app — each ends with a `cancelled` ``CourierIPC/CourierError`` whose
    /// ``CourierIPC/CourierError/backgroundTaskCancelledReason`` is
    /// ``CourierIPC/BackgroundTaskCancelledReason/userForceQuitApplication``,
    /// delivered to the session's delegate the next time the app opens it — and does not relaunch the app for
    /// background session events until the user starts it again. `courier kill APP` does the same from outside.
    ///
    /// Starts courierd if none runs (its journal may hold tasks). Blocks until courierd has journaled the
    /// cancellations (at most 30 s). Then, with `exiting` (the default), the process exits with status 0 at once,
    /// without `applicationWillTerminate`, as a force-quit kills an app.
    ///
    /// - Throws: the ``CourierIPC/CourierError`` that kept courierd from being told (`backgroundSessionWasDisconnected`,
    ///   `timedOut`, …); the process does not exit then.
    public func forceQuit(exiting: Bool = true) throws(CourierError) {
        try Application.forceQuit(app: DaemonConnection.appName, paths: DaemonPaths.current)
        if exiting {
            exit(0)
        }
    }

    /// Tells courierd at `paths` that the user force-quit `app`.
    package static func forceQuit(app: String, paths: DaemonPaths) throws(CourierError) {
        let connection: DaemonConnection
        switch DaemonConnection.open(paths: paths, app: app) {
        case .success(let opened): connection = opened
        case .failure(let error): throw error
        }
        defer { connection.close() }
        if case .failure(let error) = connection.request({ .forceQuit(.init(request: $0, app: app)) }) {
            throw error
        }
    }
}
