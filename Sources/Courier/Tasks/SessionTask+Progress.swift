public import Foundation

extension SessionTask {
    /// The task's progress as a Foundation `Progress` (iOS 11's `URLSessionTask.progress`): made the first time it is
    /// read, and from then kept up to date as the task's counts move, from the engine's threads:
    /// `completedUnitCount` is ``countOfBytesReceived`` (an upload task: ``countOfBytesSent``) and `totalUnitCount` its expected total (-1,
    /// indeterminate, while not known). At a success both become the final count (1 of 1 for an empty body), so
    /// `fractionCompleted` ends at 1. Add it to a parent with `addChild(_:withPendingUnitCount:)` to follow several
    /// tasks as one. Cancelling it cancels the task; pausing it suspends the task and resuming it resumes the task.
    /// A task whose progress is never read pays nothing for it.
    public var progress: Progress {
        let (progress, isNew) = storage.withLock { machine -> (Progress, Bool) in
            if let existing = machine.progress {
                return (existing, false)
            }
            let made = Progress(totalUnitCount: -1)
            machine.progress = made
            return (made, true)
        }
        if isNew {
            progress.isCancellable = true
            progress.isPausable = true
            progress.cancellationHandler = { [weak self] in self?.cancel() }
            progress.pausingHandler = { [weak self] in self?.suspend() }
            progress.resumingHandler = { [weak self] in self?.resume() }
            if let figures = storage.withLock({ $0.progressFigures }) {
                SessionTask.show(figures)
            }
        }
        return progress
    }

    /// Puts the counts onto the task's `Progress` (outside the task's lock: a parent's update takes its own).
    static func show(_ figures: ProgressFigures) {
        if figures.progress.totalUnitCount != figures.total {
            figures.progress.totalUnitCount = figures.total
        }
        if figures.progress.completedUnitCount != figures.completed {
            figures.progress.completedUnitCount = figures.completed
        }
    }

    /// The end of the task on its `Progress`: a success completes it, a cancellation cancels it.
    static func finish(_ progress: Progress, error: CourierError?) {
        guard let error else {
            let count = max(progress.completedUnitCount, progress.totalUnitCount, 1)
            progress.totalUnitCount = count
            progress.completedUnitCount = count
            return
        }
        if error.code == .cancelled, !progress.isCancelled {
            progress.cancel()
        }
    }
}

/// A task's `Progress` and the counts it should show.
struct ProgressFigures {
    var progress: Progress
    var completed: Int64
    var total: Int64
}

extension TaskMachine {
    /// The counts for the task's `Progress`, when someone asked for it.
    var progressFigures: ProgressFigures? {
        guard let progress else {
            return nil
        }
        if role.kind == .upload {
            return ProgressFigures(progress: progress, completed: sent, total: expectedToSend)
        }
        let total = expectedToReceive >= 0 ? bodyOffset + expectedToReceive : -1
        return ProgressFigures(progress: progress, completed: bodyOffset + received, total: total)
    }
}
