/// How the application's last background fetch went (``Application/lastBackgroundFetch``).
public struct BackgroundFetchReport: Sendable, Hashable {
    /// What the app's completion handler said; nil when it was not called in time.
    public var result: BackgroundFetchResult?
    /// The handler was not called within ``Application/Configuration/backgroundFetchTimeLimit``.
    public var overran: Bool
    /// From the delegate call to the handler's call (or to the time limit).
    public var duration: Duration

    public init(result: BackgroundFetchResult?, overran: Bool, duration: Duration) {
        self.result = result
        self.overran = overran
        self.duration = duration
    }
}
