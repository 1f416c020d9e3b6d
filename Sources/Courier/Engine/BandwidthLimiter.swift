internal import CSupport
import Foundation

/// A ``BandwidthLimit`` as the engines enforce it: one `cr_rate_limit_t` that any number of engines draw from (a
/// session's own, or courierd's for all its sessions), switched on and off at the edges of its window.
///
/// `@unchecked Sendable`: the C limit is thread-safe (`courier_engine.h`) and the pointer and limit are immutable.
package final class BandwidthLimiter: @unchecked Sendable {
    let pointer: OpaquePointer
    package let limit: BandwidthLimit

    /// Nil when the C limit cannot be made (out of memory) or the rate is not above zero.
    package init?(_ limit: BandwidthLimit) {
        guard limit.bytesPerSecond > 0, let pointer = cr_rate_limit_create(0) else {
            return nil
        }
        self.pointer = pointer
        self.limit = limit
        apply(at: Date())
    }

    deinit {
        cr_rate_limit_release(pointer)
    }

    /// Sets the rate for `now` (the limit inside the window, none outside) and waits for the window's next edge.
    private func apply(at now: Date) {
        guard let window = limit.window else {
            cr_rate_limit_set(pointer, limit.bytesPerSecond)
            return
        }
        cr_rate_limit_set(pointer, window.contains(now) ? limit.bytesPerSecond : 0)
        // Wall-clock time: the edge is a time of day. Nothing to cancel: a limiter released meanwhile is gone.
        let edge = window.nextBoundary(after: now)
        DispatchQueue.global(qos: .utility).asyncAfter(wallDeadline: .now() + max(1, edge.timeIntervalSince(now))) {
            [weak self] in
            self?.apply(at: Date())
        }
    }
}
