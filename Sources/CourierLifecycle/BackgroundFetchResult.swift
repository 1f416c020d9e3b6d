/// What a background fetch found, as the app tells its fetch completion handler (UIKit's
/// `UIBackgroundFetchResult`). courierd's scheduler favours apps that answer ``newData`` quickly and backs off
/// apps that keep answering ``noData``.
public enum BackgroundFetchResult: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// New content was downloaded.
    case newData
    /// Nothing new.
    case noData
    /// The fetch failed.
    case failed

    public var description: String { rawValue }
}
