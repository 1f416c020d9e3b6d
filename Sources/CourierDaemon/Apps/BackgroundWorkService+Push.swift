package import Courier
package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Pushes: checked as APNs checks them, shown (alerts) or paced and coalesced (silent ones) by the budget.
extension BackgroundWorkService {
    /// A push for a device token, from the socket or the HTTP endpoint: checked, then shown (an alert), delivered,
    /// coalesced or queued (a silent one). Answered as APNs answers.
    package func push(_ push: IPCMessage.SendPush, at now: Date = Date()) -> IPCMessage.PushReceipt {
        let registration: Journal.AppRegistration?
        do {
            // A token that is not 64 hex digits is not looked up.
            registration = DeviceToken.data(fromHex: push.deviceToken) == nil
                ? nil : try journal.app(withDeviceToken: push.deviceToken)
        } catch {
            return IPCMessage.PushReceipt(status: 500, reason: "InternalServerError", detail: "\(error)")
        }
        guard let registration else {
            return IPCMessage.PushReceipt(
                status: 400,
                reason: "BadDeviceToken",
                detail: "no app registered for remote notifications with device token \(push.deviceToken)"
            )
        }
        guard registration.remoteNotifications else {
            return IPCMessage.PushReceipt(
                status: 410,
                reason: "Unregistered",
                detail: "\(registration.app) is not registered for remote notifications"
            )
        }
        let notification: PushNotification
        switch PushNotification.parse(push.payload, pushType: push.pushType, priority: push.priority.map(String.init)) {
        case .success(let parsed):
            notification = parsed
        case .failure(let error):
            return IPCMessage.PushReceipt(status: error.status, reason: error.reason, detail: error.message)
        }
        let id = UUID().uuidString
        var disposition = "shown"
        if notification.kind == .alert {
            if let notifier {
                notifier.notify(summary: notification.alertTitle ?? registration.app, body: notification.alertBody ?? "")
            } else {
                disposition = "not shown (no desktop)"
            }
        }
        if notification.contentAvailable {
            let decision = state.withLock { $0.budget.offer(notification, to: registration.app, at: now) }
            switch decision {
            case .deliver:
                let handed = deliver(.remoteNotification(payload: notification.payload, pushes: 1), to: registration.app, at: now)
                // As APNs accepts a push for a device that is off, a push for an app that is not running and cannot
                // be launched (force-quit, no launch command) is accepted, and dropped.
                disposition = handed ? "delivered" : "dropped (the app is not running and cannot be launched)"
            case .coalesced:
                disposition = "coalesced"
            case .queued:
                disposition = "queued"
                rearm()
            }
        }
        logger.info("push", metadata: ["app": "\(registration.app)", "id": "\(id)", "disposition": "\(disposition)"])
        return IPCMessage.PushReceipt(status: 200, id: id, disposition: disposition)
    }
}
