import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A task whose response body arrives in memory: to a ``SessionDataDelegate`` in batches, to a completion
/// handler, or to an async caller.
///
/// `@unchecked Sendable` for the reason given on ``SessionTask``.
public class DataTask: SessionTask, @unchecked Sendable {}

extension SessionTask {
    /// A held final response of a data task with a ``SessionDataDelegate``: ask for the disposition.
    func askDisposition(_ response: HTTPURLResponse, transfer: UInt64, hop: Int, work: inout DelegateWork) {
        guard let dataTask = self as? DataTask else {
            core.runningEngine?.decide(transfer, .allow)
            return
        }
        storage.withLock { $0.awaiting = .disposition }
        let once = OnceFlag()
        work.append { [core] session in
            guard let session, let delegate = core.delegate as? any SessionDataDelegate else {
                self.continueDisposition(.allow, transfer: transfer, hop: hop)
                return
            }
            delegate.urlSession(session, dataTask: dataTask, didReceive: response) { disposition in
                guard once.claim() else {
                    return
                }
                self.continueDisposition(disposition, transfer: transfer, hop: hop)
            }
        }
    }

    func continueDisposition(_ disposition: Session.ResponseDisposition, transfer: UInt64, hop: Int) {
        let live = storage.withLock { state -> Bool in
            guard state.hop == hop, state.awaiting == .disposition, state.phase == .running,
                !state.cancelRequested
            else {
                return false
            }
            state.awaiting = nil
            if disposition == .cancel {
                state.cancelRequested = true
            }
            return true
        }
        guard live, let engine = core.runningEngine else {
            return
        }
        switch disposition {
        case .allow:
            engine.decide(transfer, .allow)
        case .cancel:
            engine.decide(transfer, .cancel)
        case .becomeDownload:
            becomeDownload(transfer: transfer, engine: engine)
        }
    }

    /// `.becomeDownload`: the same transfer continues into a staging file as a new ``DownloadTask``.
    private func becomeDownload(transfer: UInt64, engine: Engine) {
        guard let dataTask = self as? DataTask else {
            engine.decide(transfer, .allow)
            return
        }
        let staging: URL
        switch core.makeStagingFile() {
        case .success(let url):
            staging = url
        case .failure(let error):
            failHeld(error, transfer: transfer)
            return
        }
        let descriptor = open(staging.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            failHeld(
                CourierError(
                    .cannotCreateFile,
                    "cannot create the staging file",
                    osError: errno,
                    failingURL: currentURL
                ),
                transfer: transfer
            )
            return
        }
        // The download task takes over the data task's state and registry key; the data task ends silently.
        let inherited = storage.withLock { state -> TaskState in
            var copy = state
            copy.stagingURL = staging
            copy.bodyChunks = []
            state.phase = .completed
            return copy
        }
        let downloadTask = DownloadTask(
            core: core,
            kind: .download,
            identifier: core.makeIdentifier(),
            registryKey: registryKey,
            request: inherited.originalRequest,
            sink: .delegate,
            state: inherited
        )
        core.replace(key: registryKey, with: downloadTask)
        var work = DelegateWork()
        work.append { [core] session in
            guard let session, let delegate = core.delegate as? any SessionDataDelegate else {
                return
            }
            delegate.urlSession(session, dataTask: dataTask, didBecome: downloadTask)
        }
        core.dispatcher.enqueue(work)
        engine.decide(transfer, .toFile(descriptor: descriptor))
    }
}
