import Courier
import Foundation
package import Logging

/// Shows a desktop notification through the freedesktop Notifications interface: `notify-send` when it is on `PATH`,
/// else a D-Bus call through `gdbus`. Used when a background download finishes while its app is not running.
///
/// Only where a session bus exists (`DBUS_SESSION_BUS_ADDRESS`, or the systemd user bus at `$XDG_RUNTIME_DIR/bus`):
/// elsewhere (a server, CI) there is no notifier (the initialiser answers nil). The helper runs without being waited for (courierd ignores
/// SIGCHLD, so the kernel reaps it); a desktop with no notification service answers it with an error nobody reads.
package struct DesktopNotifier: Sendable {
    /// The environment the helper runs with, including the bus address.
    private let environment: [String: String]
    private let logger: Logger

    /// Nil when there is no session bus to talk to.
    package init?(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) {
        var environment = environment
        if environment["DBUS_SESSION_BUS_ADDRESS"] == nil, let runtime = environment["XDG_RUNTIME_DIR"] {
            let bus = runtime + "/bus"
            guard FileManager.default.fileExists(atPath: bus) else {
                return nil
            }
            environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + bus
        }
        guard environment["DBUS_SESSION_BUS_ADDRESS"] != nil else {
            return nil
        }
        self.environment = environment
        self.logger = logger
    }

    /// Shows `summary` and `body`. Returns at once; a helper that cannot be started is logged and skipped.
    package func notify(summary: String, body: String) {
        let notifySend = ["notify-send", "--app-name=courierd", summary, body]
        if case .success = ProcessSpawner.spawn(notifySend, environment: environment) {
            return
        }
        // org.freedesktop.Notifications.Notify(app_name s, replaces_id u, app_icon s, summary s, body s, actions as,
        // hints a{sv}, expire_timeout i), each argument in GVariant text so that no introspection is needed.
        let gdbus = [
            "gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications",
            "--object-path", "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify",
            Self.quoted("courierd"), "uint32 0", Self.quoted(""), Self.quoted(summary), Self.quoted(body),
            "@as []", "@a{sv} {}", "int32 -1",
        ]
        if case .failure(let error) = ProcessSpawner.spawn(gdbus, environment: environment) {
            logger.info(
                "no desktop notification: neither notify-send nor gdbus could be started",
                metadata: ["error": "\(error.localizedDescription)"]
            )
        }
    }

    /// A GVariant string literal: single quotes, with backslashes and quotes escaped.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
