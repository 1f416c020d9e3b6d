/// Why courierd cancelled a background task on its own, as `NSURLErrorBackgroundTaskCancelledReasonKey` says on iOS
/// (docs/background-model.md #9): carried by the task's `cancelled` ``CourierError``.
public enum BackgroundTaskCancelledReason: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The user force-quit the app (`courier kill APP`, or `Application.forceQuit(exiting:)`): its background work
    /// stops, and courierd does not relaunch it until the user starts it again.
    case userForceQuitApplication
    /// Background transfers were turned off for the app.
    case backgroundUpdatesDisabled
    /// The system could not go on: power, storage, connectivity or data plan.
    case insufficientSystemResources

    public var description: String { rawValue }
}
