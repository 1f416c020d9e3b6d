package import Foundation

/// The bodies of the messages about apps rather than sessions (`docs/ipc.md`, "Background fetch and push"): an app's
/// registration, the wakes courierd sends it, pushes, and the listing `courier apps` shows.
extension IPCMessage {
    /// The app's background-work registration; sent again whenever it changes. Answered with
    /// ``Reply/Result/registered(deviceToken:)``.
    package struct RegisterApp: Codable, Sendable, Equatable {
        package var request: UInt64
        /// `setMinimumBackgroundFetchInterval`: nil for never, 0 for the minimum, else seconds.
        package var fetchInterval: Double?
        /// `registerForRemoteNotifications()` was called: the answer carries the device token. False does not
        /// unregister an app that registered before (from another process of it).
        package var remoteNotifications: Bool

        package init(request: UInt64, fetchInterval: Double?, remoteNotifications: Bool) {
            self.request = request
            self.fetchInterval = fetchInterval
            self.remoteNotifications = remoteNotifications
        }
    }

    /// courierd asks the connected app to do background work: a fetch, or a silent push's handler. Sent before courierd
    /// resumes an app that is stopped (suspended): the app knows the SIGCONT is courierd's by its sender and stays in
    /// the background. The app answers with ``WakeCompleted``.
    package struct Wake: Codable, Sendable, Equatable {
        package enum Reason: Codable, Sendable, Equatable {
            case fetch
            /// The push's JSON payload and how many pushes it stands for (coalesced ones included).
            case remoteNotification(payload: Data, pushes: Int)
        }

        package var wake: UInt64
        package var reason: Reason

        package init(wake: UInt64, reason: Reason) {
            self.wake = wake
            self.reason = reason
        }
    }

    /// The app's handler for a wake (or for the work it was launched for: `wake` is nil then) finished.
    package struct WakeCompleted: Codable, Sendable, Equatable {
        package enum Work: String, Codable, Sendable {
            case fetch
            case remoteNotification
        }

        package var wake: UInt64?
        package var work: Work
        /// `newData`, `noData` or `failed`; nil when the handler was not called in time (an overrun).
        package var result: String?
        package var duration: Double
        /// What the process's tasks moved meanwhile (sent and received).
        package var bytes: Int64

        package init(wake: UInt64?, work: Work, result: String?, duration: Double, bytes: Int64) {
            self.wake = wake
            self.work = work
            self.result = result
            self.duration = duration
            self.bytes = bytes
        }
    }

    /// A push for the app with `deviceToken` (`courier push`, or the HTTP endpoint). Answered with
    /// ``Reply/Result/push(_:)``, accepted or not.
    package struct SendPush: Codable, Sendable, Equatable {
        package var request: UInt64
        package var deviceToken: String
        /// The APNs-shaped JSON body (`{"aps":{"content-available":1}, …}`).
        package var payload: Data
        /// The `apns-push-type` header (`background`, `alert`), when given.
        package var pushType: String?
        /// The `apns-priority` header (5 or 10), when given.
        package var priority: Int?

        package init(request: UInt64, deviceToken: String, payload: Data, pushType: String? = nil, priority: Int? = nil) {
            self.request = request
            self.deviceToken = deviceToken
            self.payload = payload
            self.pushType = pushType
            self.priority = priority
        }
    }

    /// What became of a push, as APNs would answer: 200 with an id, or a status and APNs's reason.
    package struct PushReceipt: Codable, Sendable, Equatable {
        package var status: Int
        /// APNs's reason (`BadDeviceToken`, `PayloadTooLarge`, …) when refused.
        package var reason: String?
        package var detail: String?
        /// The id of an accepted push (`apns-id`).
        package var id: String?
        /// For an accepted push: `delivered`, `coalesced`, `queued` (rate limited), or `shown` (an alert).
        package var disposition: String?

        package init(status: Int, reason: String? = nil, detail: String? = nil, id: String? = nil, disposition: String? = nil) {
            self.status = status
            self.reason = reason
            self.detail = detail
            self.id = id
            self.disposition = disposition
        }
    }

    package struct ListApps: Codable, Sendable, Equatable {
        package var request: UInt64

        package init(request: UInt64) {
            self.request = request
        }
    }

    /// `courier fetch simulate APP` (wake the app for a fetch now, launching it if it is not running) and
    /// `courier fetch launch APP` (launch it for a fetch; refused while it runs).
    package struct TriggerFetch: Codable, Sendable, Equatable {
        package var request: UInt64
        package var app: String
        package var launch: Bool

        package init(request: UInt64, app: String, launch: Bool) {
            self.request = request
            self.app = app
            self.launch = launch
        }
    }

    /// One registered app as `courier apps` shows it.
    package struct AppSummary: Codable, Sendable, Equatable {
        package struct Fetch: Codable, Sendable, Equatable {
            package var at: Date
            package var duration: Double
            package var bytes: Int64
            package var outcome: String

            package init(at: Date, duration: Double, bytes: Int64, outcome: String) {
                self.at = at
                self.duration = duration
                self.bytes = bytes
                self.outcome = outcome
            }
        }

        package var app: String
        package var running: Bool
        package var deviceToken: String?
        /// The interval asked for (nil: never) and the one the scheduler applies after backing off or favouring.
        package var fetchInterval: Double?
        package var effectiveInterval: Double?
        package var nextFetch: Date?
        package var nextFetchReason: String?
        package var lastFetches: [Fetch]

        package init(
            app: String,
            running: Bool,
            deviceToken: String?,
            fetchInterval: Double?,
            effectiveInterval: Double?,
            nextFetch: Date?,
            nextFetchReason: String?,
            lastFetches: [Fetch]
        ) {
            self.app = app
            self.running = running
            self.deviceToken = deviceToken
            self.fetchInterval = fetchInterval
            self.effectiveInterval = effectiveInterval
            self.nextFetch = nextFetch
            self.nextFetchReason = nextFetchReason
            self.lastFetches = lastFetches
        }
    }
}
