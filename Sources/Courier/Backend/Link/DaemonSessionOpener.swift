import Foundation

/// How a background session reaches courierd: connect (starting courierd when none answers, if asked to), say hello,
/// open the session. The same steps make a session's first connection and every later one after courierd restarted.
struct DaemonSessionOpener: Sendable {
    struct Opened: Sendable {
        var connection: DaemonConnection
        /// The first task identifier courierd has not seen in this session.
        var nextTaskIdentifier: Int
    }

    var paths: DaemonPaths
    var app: String
    /// What courierd runs to relaunch the app; nil when the session sends no launch events.
    var launchCommand: [String]?
    var session: IPCMessage.OpenSession

    var identifier: String {
        session.identifier
    }

    /// A connection with the session open on it. Fails with courierd's refusal (`backgroundSessionInUse`), or with
    /// why courierd could not be reached or started.
    func open(startingDaemon: Bool) -> Result<Opened, CourierError> {
        let connection: DaemonConnection
        switch DaemonConnection.open(
            paths: paths,
            app: app,
            launchCommand: launchCommand,
            startingDaemon: startingDaemon
        ) {
        case .success(let opened): connection = opened
        case .failure(let error): return .failure(error)
        }
        let answer = connection.request { number in
            var request = session
            request.request = number
            return .openSession(request)
        }
        switch answer {
        case .success(.sessionOpened(let next)):
            return .success(Opened(connection: connection, nextTaskIdentifier: next))
        case .success:
            connection.close()
            return .failure(
                CourierError(.badServerResponse, "courierd answered the opening of the session with something else")
            )
        case .failure(let refusal):
            connection.close()
            return .failure(refusal)
        }
    }
}
