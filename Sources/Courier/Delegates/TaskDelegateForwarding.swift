extension SessionDelegate {
    /// When this delegate is `task`'s own (``SessionTask/delegate``) and leaves a call to its protocol's default, the
    /// session's delegate of type `Target` that the call goes on to: Apple asks a task's delegate first and the
    /// session's delegate for each method the task's delegate does not implement, and in Swift a method left to its
    /// default is one not implemented. Nil for the session's own delegate (its defaults are the documented ones).
    func passedOn<Target>(_ task: SessionTask, in session: Session, as target: Target.Type) -> Target? {
        guard let own = task.delegate, own === self, let sessionDelegate = session.core.delegate,
            sessionDelegate !== self
        else {
            return nil
        }
        return sessionDelegate as? Target
    }
}
