/// Why courierd refused a push, named as APNs names its answers (a server written for APNs reads them the same
/// way), with the HTTP status the local endpoint sends. A refused push never reaches the app.
package struct PushError: Error, Sendable, Hashable, CustomStringConvertible {
    /// APNs's `reason`: `PayloadEmpty`, `PayloadTooLarge`, `BadPayload`, `MissingAps`, `BadPriority`,
    /// `InvalidPushType`, `BadDeviceToken`, `TooManyRequests`.
    package var reason: String
    /// 400, 410 (a token no app holds any more), 413 or 429.
    package var status: Int
    /// One line for the sender.
    package var message: String

    package init(_ reason: String, status: Int = 400, _ message: String) {
        self.reason = reason
        self.status = status
        self.message = message
    }

    package var description: String { "\(reason) (\(status)): \(message)" }

    package static func payloadEmpty() -> PushError {
        PushError("PayloadEmpty", "the payload is empty")
    }

    package static func payloadTooLarge(_ count: Int, limit: Int) -> PushError {
        PushError("PayloadTooLarge", status: 413, "the payload is \(count) bytes; the limit is \(limit)")
    }

    package static func badPayload(_ message: String) -> PushError {
        PushError("BadPayload", message)
    }
}
