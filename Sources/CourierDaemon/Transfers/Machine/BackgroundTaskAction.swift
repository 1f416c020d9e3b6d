package import Courier
package import Foundation

/// What the runner does for one journaled task, as ``BackgroundTaskMachine`` decides it: in the order given, with no
/// lock held.
package enum BackgroundTaskAction: Sendable, Equatable {
    /// Make the next attempt's session task (from the checkpoint's partial file, the app's resume data, or from
    /// zero) and report it with ``BackgroundTaskMachine/attemptMade(_:stopping:now:)``.
    case makeAttempt(JournaledTask)
    /// Start the attempt just made.
    case runAttempt
    /// Abandon the attempt just made, unstarted (the task was cancelled or courierd began stopping meanwhile).
    case discardAttempt
    case suspendAttempt
    case resumeAttempt
    /// End the running attempt; `keepingResumeData`: its partial file is kept, as resume data, for a later attempt.
    case cancelAttempt(keepingResumeData: Bool)
    /// Look at the launch again at `date` (``BackgroundTaskMachine/launch(conditionsWait:stopping:now:)``).
    case wake(at: Date)
    /// Look at the launch now.
    case launch
    case journalState(JournaledTask.State)
    /// Journal how far the running attempt got (the runner adds its partial file, flushed), with `progress` the app
    /// has not heard of; report it with ``BackgroundTaskMachine/checkpointed(_:reportingProgress:)``.
    case checkpoint(TransferCheckpoint, progress: IPCMessage.BackgroundEvent?)
    /// Journal the next attempt's checkpoint from the ended attempt's resume data (its partial file, flushed), with
    /// the retry when there is one; report it with ``BackgroundTaskMachine/kept(_:)``.
    case keepForNextAttempt(TransferCheckpoint, resumeData: Data?, retry: Retry?)
    /// Journal and announce one event.
    case record(IPCMessage.BackgroundEvent)
    /// The download succeeded: move its file (`length` bytes) under the daemon's downloads directory, then journal
    /// `leading`, `downloaded` and `completion` (or `completion` with the failure to move) in one transaction.
    case finishDownload(leading: [IPCMessage.BackgroundEvent], completion: IPCMessage.BackgroundEvent, length: Int64)
    /// Journal the task's last events in one transaction; its upload copy goes.
    case finish([IPCMessage.BackgroundEvent])
    /// Journal the task's changed spec (its delayed start decided: no begin date, maybe a new request).
    case rewriteTask(IPCMessage.BackgroundTask)

    /// A retry: the failed attempts so far, and when the next may start.
    package struct Retry: Sendable, Equatable {
        package var attempts: Int
        package var at: Date

        package init(attempts: Int, at: Date) {
            self.attempts = attempts
            self.at = at
        }
    }
}
