/// True the first time only, whatever thread asks and how often: for completion handlers handed to a delegate
/// and for shutdowns that are safe to call more than once.
package final class OnceFlag: Sendable {
    private let fired = LockedValue(false)

    package init() {}

    /// True the first time only.
    package func claim() -> Bool {
        fired.withLock { fired in
            defer { fired = true }
            return !fired
        }
    }
}
