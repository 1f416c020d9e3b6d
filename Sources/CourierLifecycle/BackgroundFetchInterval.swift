/// How often the application wants to be woken for a background fetch, at least apart
/// (`Application.setMinimumBackgroundFetchInterval(_:)`): ``never`` (the default), ``minimum`` (as often as
/// courierd allows), or a number of seconds. Advisory: courierd fetches shortly before the times the app is usually
/// used, never more often than this.
public struct BackgroundFetchInterval: Sendable, Hashable, CustomStringConvertible {
    /// Seconds between fetches: 0 for ``minimum``, nil for ``never``.
    public let seconds: Double?

    private init(seconds: Double?) {
        self.seconds = seconds
    }

    /// No background fetch (the default).
    public static let never = BackgroundFetchInterval(seconds: nil)
    /// As often as courierd allows.
    public static let minimum = BackgroundFetchInterval(seconds: 0)

    /// At least `seconds` apart (a negative value counts as ``minimum``).
    public static func seconds(_ seconds: Double) -> BackgroundFetchInterval {
        BackgroundFetchInterval(seconds: max(0, seconds))
    }

    public var description: String {
        switch seconds {
        case nil: "never"
        case 0?: "minimum"
        case let value?: "\(value) s"
        }
    }
}
