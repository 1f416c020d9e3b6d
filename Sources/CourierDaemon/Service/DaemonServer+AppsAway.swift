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

    /// One notification per batch: the downloads these events finished are added to those of the session that
    /// finished while its app was away, and once the session has no task left running, one notification says them
    /// ("Downloaded <description>" for one, "Downloaded N files" with their names for several), titled with the app.
    func notifyFinishedDownloads(_ session: String, _ events: [IPCMessage.SequencedEvent]) {
        let finished = Set(events.compactMap { event -> Int? in
            if case .downloaded = event.event.payload { event.task } else { nil }
        })
        guard let notifier, !finished.isEmpty else {
            return
        }
        let running = (try? journal.activity(session: session).activeTasks) ?? 0
        let batch = state.withLock { state -> Set<Int>? in
            state.finishedWhileAway[session, default: []].formUnion(finished)
            guard running == 0 else {
                return nil
            }
            return state.finishedWhileAway.removeValue(forKey: session)
        }
        guard let batch, let tasks = try? journal.tasks(session: session) else {
            return
        }
        let names = tasks.filter { batch.contains($0.identifier) }.sorted { $0.identifier < $1.identifier }.map {
            $0.spec.taskDescription ?? $0.spec.request.url?.lastPathComponent ?? "a file"
        }
        let app = (try? journal.app(ofSession: session)) ?? session
        if names.count == 1 {
            notifier.notify(summary: app, body: "Downloaded \(names[0])")
        } else {
            let shown = names.prefix(3).map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")
            let more = names.count > 3 ? ", …" : ""
            notifier.notify(summary: app, body: "Downloaded \(max(names.count, batch.count)) files: \(shown)\(more)")
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
