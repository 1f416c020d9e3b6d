import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When `courier get --retry N` tries a URL again, and after how long: curl's `--retry` rule (a timeout, HTTP 408,
/// 429, 500, 502, 503, 504), plus a lost or refused connection (curl needs `--retry-connrefused` for the latter).
enum RetryRule {
    /// Whether a transfer that failed with `code` may succeed if tried again.
    static func retries(_ code: CourierError.Code) -> Bool {
        [.timedOut, .networkConnectionLost, .cannotConnectToHost].contains(code)
    }

    /// Whether a final HTTP `status` may be different if asked again.
    static func retries(status: Int?) -> Bool {
        guard let status else {
            return false
        }
        return [408, 429, 500, 502, 503, 504].contains(status)
    }

    /// 1 s before the first retry, then twice as long each time, up to 10 minutes.
    static func delay(beforeAttempt attempt: Int) -> Duration {
        .seconds(min(600, 1 << min(max(attempt - 1, 0), 10)))
    }

    /// The delay a response asks for in `Retry-After` (seconds, at most 60 s); nil when it asks for none or gives a
    /// date (the backoff applies then).
    static func retryAfter(_ response: HTTPURLResponse?) -> Duration? {
        guard let text = response?.value(forHTTPHeaderField: "Retry-After"),
            let seconds = Int(text.trimmingCharacters(in: .whitespaces)), seconds >= 0
        else {
            return nil
        }
        return .seconds(min(seconds, 60))
    }
}
