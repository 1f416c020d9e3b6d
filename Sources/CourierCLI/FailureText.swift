import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the `error:` line of a failed transfer says after its subject, for `get` and `put` alike.
enum FailureText {
    /// Why `response` is not a success: `HTTP 401 Unauthorized` for a status other than 2xx (whatever the
    /// body, an empty one too), `no HTTP response` when there is none. Nil for a 2xx response.
    static func status(of response: URLResponse?) -> String? {
        guard let response = response as? HTTPURLResponse else {
            return "no HTTP response"
        }
        guard (200..<300).contains(response.statusCode) else {
            let reason = HTTPURLResponse.localizedString(forStatusCode: response.statusCode)
            return "HTTP \(response.statusCode) \(reason)"
        }
        return nil
    }

    /// The error's description without what the error line already says (the URL) or what the command handles
    /// itself (resume data).
    static func describe(_ error: any Error) -> String {
        guard var courierError = error as? CourierError else {
            return String(describing: error)
        }
        courierError.failingURL = nil
        courierError.resumeData = nil
        return courierError.description
    }
}
