import Foundation

/// Session-level events.
///
/// Every delegate method of every Courier delegate protocol is called on the session's `delegateQueue`, one at
/// a time (serially, even when the queue is concurrent), in the order documented on each method. All methods
/// have default implementations that do nothing (or the documented default), so implement only what you need.
/// The session holds its delegate strongly until it is invalidated.
public protocol SessionDelegate: AnyObject, Sendable {
    /// The session was invalidated: once, after `finishTasksAndInvalidate()` saw its last task complete, or after
    /// `invalidateAndCancel()` cancelled every task. `error` is nil for an explicit invalidation. It is the last
    /// call the session makes; afterwards it releases the delegate.
    func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?)

    /// A background session delivered every event courierd had kept for it (the ones it missed while the app was
    /// not running): once per such replay, after the replayed task events. Call the completion handler that
    /// `handleEventsForBackgroundURLSession` gave you here.
    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session)
}

extension SessionDelegate {
    public func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {}

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {}
}
