package import Courier
import Foundation

/// What an attempt's task reports (``TaskObserver``), as inputs of the tasks' machines.
extension BackgroundSessionRunner {
    package func task(_ task: SessionTask, progressed progress: TaskProgress) {
        drive(attemptOf: task) { machine, _ in
            switch progress {
            case .received(let total, let expected, let response):
                machine.progressed(received: total, expectedToReceive: expected, response: response, now: Date())
            case .sent(let total, let expected):
                machine.progressed(sent: total, expectedToSend: expected, now: Date())
            case .resumed(let offset, let expectedTotal, let response):
                machine.resumed(offset: offset, expectedTotal: expectedTotal, response: response, now: Date())
            }
        }
    }

    /// The attempt ended. A download that succeeded has its file moved under the daemon's downloads directory (or
    /// deleted when it cannot be: true is returned either way), then its events (`relocated`, `response`,
    /// `downloaded`, `complete`) journaled in one transaction, then announced; an upload's response and body are
    /// journaled with its completion; a failure goes to the machine's retry policy.
    package func task(_ task: SessionTask, ended end: TaskEnd) -> Bool {
        settings.slots.release(ObjectIdentifier(task))
        if end.error == nil, let file = end.file {
            let length = FileManager.default.fileLength(atPath: file.path) ?? -1
            let actions = drive(attemptOf: task, ended: end) { machine, _ in
                machine.downloadFinished(response: end.response, length: length)
            }
            return actions.contains(where: \.isFinishDownload)
        }
        if end.error == nil, task is UploadTask {
            drive(attemptOf: task) { machine, _ in
                machine.uploadFinished(response: end.response, body: end.body)
            }
            return false
        }
        let failure = end.error ?? CourierError(.unknown, "the attempt ended without its file")
        let resourceTimeout = state.withLock { $0.configuration.resourceTimeout }
        drive(attemptOf: task) { machine, _ in
            machine.attemptFailed(failure, response: end.response, resourceTimeout: resourceTimeout, now: Date())
        }
        return false
    }
}
