/// A snapshot of one background task that was begun and not yet ended, as listed by
/// ``Application/openBackgroundTasks`` and by the watchdog's ``WatchdogReport``.
public struct OpenBackgroundTask: Sendable, Hashable, CustomStringConvertible {
    public var identifier: BackgroundTaskIdentifier
    /// The name given to `beginBackgroundTask(withName:expirationHandler:)`, if any.
    public var name: String?
    /// How long ago the task was begun (on the application's clock).
    public var age: Duration

    public init(identifier: BackgroundTaskIdentifier, name: String?, age: Duration) {
        self.identifier = identifier
        self.name = name
        self.age = age
    }

    public var description: String {
        let name = self.name.map { "\"\($0)\"" } ?? "(unnamed)"
        return "background task \(self.identifier) \(name), open for \(formatSeconds(self.age))"
    }
}
