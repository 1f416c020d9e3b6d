package import Courier
package import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The daemon session's delegate calls, as inputs of the tasks' machines.
extension BackgroundSessionRunner {
    package func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        drive(attemptOf: downloadTask) { machine, _ in
            machine.progressed(received: totalBytesWritten, expectedToReceive: totalBytesExpectedToWrite, now: Date())
        }
    }

    package func urlSession(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        drive(attemptOf: task) { machine, _ in
            machine.progressed(sent: totalBytesSent, expectedToSend: totalBytesExpectedToSend, now: Date())
        }
    }

    package func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        drive(attemptOf: downloadTask) { machine, _ in
            machine.resumed(offset: fileOffset, expectedTotal: expectedTotalBytes, now: Date())
        }
    }

    /// The download succeeded: its file is flushed and moved under the daemon's downloads directory, then its
    /// events (`relocated`, `response`, `downloaded`, `complete`) are journaled in one transaction, then announced.
    package func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        let response = downloadTask.receivedResponse
        let length = FileManager.default.fileLength(atPath: location.path) ?? -1
        drive(attemptOf: downloadTask, location: location) { machine, _ in
            machine.downloadFinished(response: response, length: length)
        }
    }

    package func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        settings.slots.release(ObjectIdentifier(task))
        attemptEnded(task, error: error)
    }

    /// An upload's completion handler.
    func uploadEnded(_ identifier: Int, body: Data?, error: (any Error)?) {
        guard let attempt = state.withLock({ $0.attempts[identifier] }) else {
            return
        }
        settings.slots.release(ObjectIdentifier(attempt))
        guard error == nil else {
            attemptEnded(attempt, error: error)
            return
        }
        let response = attempt.receivedResponse
        drive(identifier) { machine, _ in
            machine.uploadFinished(response: response, body: body)
        }
    }

    /// An attempt ended without success (or a download ended after its file was handed over, which its machine
    /// ignores).
    private func attemptEnded(_ task: SessionTask, error: (any Error)?) {
        let failure = (error as? CourierError) ?? CourierError(.unknown, error.map { "\($0)" } ?? "no error")
        let response = task.receivedResponse
        let resourceTimeout = state.withLock { $0.configuration.resourceTimeout }
        drive(attemptOf: task) { machine, _ in
            machine.attemptFailed(failure, response: response, resourceTimeout: resourceTimeout, now: Date())
        }
    }
}
