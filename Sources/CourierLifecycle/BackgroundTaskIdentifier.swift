/// Names one background task begun with ``Application/beginBackgroundTask(withName:expirationHandler:)``.
///
/// Identifiers are unique within a process and never reused. ``invalid`` is what
/// `beginBackgroundTask` returns when no background time is left; passing it to
/// ``Application/endBackgroundTask(_:)`` is harmless.
public struct BackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// The identifier of no task: returned when a task could not be begun.
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String {
        self == .invalid ? "invalid" : String(self.rawValue)
    }
}
