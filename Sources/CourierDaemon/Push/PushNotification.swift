package import Foundation

/// A push as the sender gave it, checked the way APNs checks one (docs/background-model.md #15): a JSON object of at
/// most 4 KiB with an `aps` dictionary; `content-available: 1` with no alert, sound or badge is a silent
/// (background) push, which must be sent with priority 5.
package struct PushNotification: Sendable, Equatable {
    /// What the app is asked to do.
    package enum Kind: String, Sendable, Equatable {
        /// `content-available` only: the app is woken in the background to fetch.
        case background
        /// An alert (shown as a desktop notification), perhaps also waking the app.
        case alert
    }

    /// APNs's limit for a regular push.
    package static let maximumPayloadLength = 4096

    package var kind: Kind
    /// `apns-priority`: 5 (when convenient) or 10 (at once).
    package var priority: Int
    /// `aps.content-available == 1`: the app's `didReceiveRemoteNotification(_:fetchCompletionHandler:)` runs.
    package var contentAvailable: Bool
    /// The alert's title and body, when there is an alert.
    package var alertTitle: String?
    package var alertBody: String?
    /// The payload exactly as sent (the app's `userInfo`).
    package var payload: Data

    /// Checks `payload` and the `apns-push-type` / `apns-priority` headers (nil: derived from the payload, as APNs
    /// does for a missing header).
    package static func parse(
        _ payload: Data,
        pushType: String? = nil,
        priority: String? = nil
    ) -> Result<PushNotification, PushError> {
        guard !payload.isEmpty else {
            return .failure(.payloadEmpty())
        }
        guard payload.count <= maximumPayloadLength else {
            return .failure(.payloadTooLarge(payload.count, limit: maximumPayloadLength))
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: payload)
        } catch {
            return .failure(.badPayload("the payload is not JSON"))
        }
        guard let root = object as? [String: Any] else {
            return .failure(.badPayload("the payload is not a JSON object"))
        }
        guard let aps = root["aps"] as? [String: Any] else {
            return .failure(PushError("MissingAps", "the payload has no \"aps\" dictionary"))
        }
        let contentAvailable = (aps["content-available"] as? NSNumber)?.intValue == 1
        let (title, body) = alert(aps["alert"])
        let visible = title != nil || body != nil || aps["sound"] != nil || aps["badge"] != nil
        guard contentAvailable || visible else {
            return .failure(.badPayload("\"aps\" has neither content-available: 1 nor an alert, sound or badge"))
        }
        let derivedType = visible ? Kind.alert : .background
        let kind: Kind
        switch pushType {
        case nil: kind = derivedType
        case "background": kind = .background
        case "alert": kind = .alert
        case let other?:
            return .failure(PushError("InvalidPushType", "apns-push-type \"\(other)\" is not background or alert"))
        }
        if kind == .background && visible {
            return .failure(.badPayload("a background push carries no alert, sound or badge"))
        }
        if kind == .background && !contentAvailable {
            return .failure(.badPayload("a background push needs \"content-available\": 1"))
        }
        let level = priority.map { Int($0) } ?? (kind == .background ? 5 : 10)
        guard let level, level == 5 || level == 10 else {
            return .failure(PushError("BadPriority", "apns-priority must be 5 or 10"))
        }
        if kind == .background && level != 5 {
            return .failure(PushError("BadPriority", "a background push must be sent with apns-priority 5"))
        }
        return .success(
            PushNotification(
                kind: kind,
                priority: level,
                contentAvailable: contentAvailable,
                alertTitle: title,
                alertBody: body,
                payload: payload
            )
        )
    }

    /// `aps.alert`: a string (the body) or a dictionary with `title` and `body`.
    private static func alert(_ value: Any?) -> (String?, String?) {
        if let text = value as? String {
            return (nil, text)
        }
        guard let dictionary = value as? [String: Any] else {
            return (nil, nil)
        }
        return (dictionary["title"] as? String, dictionary["body"] as? String)
    }
}
