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
}

extension SessionDelegate {
    public func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {}
}
