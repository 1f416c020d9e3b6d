import Foundation

extension SessionTask {
    /// A delegate for this task alone (iOS 15's `URLSessionTask.delegate`): asked before the session's delegate, for
    /// every task call of the protocols it conforms to (``SessionTaskDelegate``, and ``SessionDataDelegate`` or
    /// ``SessionDownloadDelegate``); a method it leaves to its default goes on to the session's delegate. Its calls
    /// come on the session's delegate queue, in the documented order, like the session delegate's. The task holds it
    /// strongly until the task completes. Set it before `resume()`: a data task asks its data delegate for the
    /// response's disposition only when one was there at `resume()`. Ignored by the tasks of a background session (as
    /// on Apple's platforms: their events may come to another process, after a relaunch).
    public var delegate: (any SessionTaskDelegate)? {
        get { storage.withLock { $0.ownDelegate } }
        set {
            guard core.configuration.identifier == nil else {
                return
            }
            let asks = SessionTask.asksDisposition(
                kind: kind,
                sink: sink,
                dataDelegate: core.isDataDelegate || newValue is any SessionDataDelegate
            )
            storage.withLock { machine in
                machine.ownDelegate = newValue
                if machine.phase == .created {
                    machine.role.asksDisposition = asks
                }
            }
        }
    }

    /// Whether a data delegate gets the body as it arrives (true, the default) or in one
    /// ``SessionDataDelegate/urlSession(_:dataTask:didReceive:)-(_,_,Data)`` once all of it is here (false), as
    /// iOS 14.5's property; the body is then held in memory, within the configuration's
    /// ``SessionConfiguration/maximumCollectedBodyLength``. Read at `resume()`. Affects data and upload tasks
    /// reporting to a delegate only.
    public var prefersIncrementalDelivery: Bool {
        // A delegate's body is collected only when this is false (other sinks collect theirs for their own reasons).
        get { !sink.usesDelegateForBody || storage.withLock { !$0.role.collectsBody } }
        set {
            storage.withLock { machine in
                guard machine.phase == .created, kind != .download, sink.usesDelegateForBody else {
                    return
                }
                machine.role.collectsBody = !newValue
            }
        }
    }

    /// The task's own delegate when it conforms to `Target`, else the session's delegate when that does.
    func delegate<Target>(as target: Target.Type) -> Target? {
        if let own = storage.withLock({ $0.ownDelegate }) as? Target {
            return own
        }
        return core.delegate as? Target
    }

    /// The delegate that hears this task's ``SessionTaskDelegate`` calls, if any.
    var taskDelegate: (any SessionTaskDelegate)? {
        delegate(as: (any SessionTaskDelegate).self)
    }

    /// Whether a task delegate would hear this task's calls: checked before any work is queued for one, so that a
    /// task of a session without a delegate (the async conveniences' fast path) makes none.
    var hasTaskDelegate: Bool {
        core.isTaskDelegate || storage.withLock { $0.ownDelegate != nil }
    }

    var hasDataDelegate: Bool {
        core.isDataDelegate || storage.withLock { $0.ownDelegate is any SessionDataDelegate }
    }

    var hasDownloadDelegate: Bool {
        core.isDownloadDelegate || storage.withLock { $0.ownDelegate is any SessionDownloadDelegate }
    }

    /// Tells the delegates that the session made this task (``SessionTaskDelegate/urlSession(_:didCreateTask:)``),
    /// on the calling thread.
    func announceCreation(to session: Session) {
        guard hasTaskDelegate, let delegate = taskDelegate else {
            return
        }
        delegate.urlSession(session, didCreateTask: self)
    }
}
