import Courier
import Foundation
import Logging

/// A session's task ended while no app held the session: the user is told (a desktop notification) and the app is
/// relaunched for its events.
extension DaemonServer {
    /// A task of `session` ended while its app is not connected: a finished download is shown as a desktop
    /// notification (where there is a desktop), and the app is relaunched for its events. Called under the runner's
    /// delivery lock: the work (journal reads, spawning helpers) happens after it is released.
    func endedWhileAway(_ session: String, _ events: [IPCMessage.SequencedEvent]) {
        DispatchQueue.global().async { [self] in
            self.notifyFinishedDownloads(session, events)
            self.wakeApp(of: session)
        }
    }

    /// One notification per download these events finished ("Downloaded <description>"), titled with the app.
    func notifyFinishedDownloads(_ session: String, _ events: [IPCMessage.SequencedEvent]) {
        let finished = Set(events.compactMap { event -> Int? in
            if case .downloaded = event.event.payload { event.task } else { nil }
        })
        guard let notifier, !finished.isEmpty, let tasks = try? journal.tasks(session: session) else {
            return
        }
        let app = (try? journal.app(ofSession: session)) ?? session
        for task in tasks where finished.contains(task.identifier) {
            let name = task.spec.taskDescription ?? task.spec.request.url?.lastPathComponent ?? "a file"
            notifier.notify(summary: app, body: "Downloaded \(name)")
        }
    }

    /// Relaunches the app of `session` when its session asks for launch events and it registered a launch command.
    func wakeApp(of session: String) {
        guard let runner = sessions.runner(session), runner.sendsLaunchEvents,
            let app = try? journal.app(ofSession: session),
            let command = try? journal.launchCommand(of: app), !command.isEmpty
        else {
            return
        }
        launcher.wake(app: app, session: session, command: command) { [self] in
            !self.sessions.isHeld(session)
        }
    }
}
