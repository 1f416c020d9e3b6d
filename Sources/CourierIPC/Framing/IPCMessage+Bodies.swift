package import Foundation

/// The bodies of the messages of `docs/ipc.md`, each encoded as a JSON object.
extension IPCMessage {
    /// The app introduces itself (its first frame on a connection).
    package struct Hello: Codable, Sendable, Equatable {
        package var app: String
        package var pid: Int32
        /// The argv that relaunches the app in the background; nil when it cannot be relaunched.
        package var launchCommand: [String]?
        /// Whether the app is in the foreground (``AppState`` tells of later changes); nil counts as the foreground.
        package var inForeground: Bool?

        package init(app: String, pid: Int32, launchCommand: [String]? = nil, inForeground: Bool? = nil) {
            self.app = app
            self.pid = pid
            self.launchCommand = launchCommand
            self.inForeground = inForeground
        }
    }

    package struct Welcome: Codable, Sendable, Equatable {
        package var daemonVersion: String
        package var protocolVersion: UInt16

        package init(daemonVersion: String, protocolVersion: UInt16 = IPCFrame.currentVersion) {
            self.daemonVersion = daemonVersion
            self.protocolVersion = protocolVersion
        }
    }

    /// A background session's configuration, as far as the daemon uses it.
    package struct OpenSession: Codable, Sendable, Equatable {
        package var request: UInt64
        package var identifier: String
        package var sendsLaunchEvents: Bool
        package var isDiscretionary: Bool
        package var allowsExpensiveNetworkAccess: Bool
        package var resourceTimeout: Double
        package var requestTimeout: Double
        package var additionalHeaders: [String: String]

        package init(
            request: UInt64,
            identifier: String,
            sendsLaunchEvents: Bool = true,
            isDiscretionary: Bool = false,
            allowsExpensiveNetworkAccess: Bool = true,
            resourceTimeout: Double = 7 * 24 * 3600,
            requestTimeout: Double = 60,
            additionalHeaders: [String: String] = [:]
        ) {
            self.request = request
            self.identifier = identifier
            self.sendsLaunchEvents = sendsLaunchEvents
            self.isDiscretionary = isDiscretionary
            self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
            self.resourceTimeout = resourceTimeout
            self.requestTimeout = requestTimeout
            self.additionalHeaders = additionalHeaders
        }
    }

    /// One background task: downloads, and uploads from a file (background sessions make no data tasks).
    package struct BackgroundTask: Codable, Sendable, Equatable {
        package enum Kind: String, Codable, Sendable {
            case download
            case upload
        }

        package var identifier: Int
        package var kind: Kind
        package var request: TaskRequest
        package var uploadFile: String?
        package var resumeData: Data?
        package var taskDescription: String?
        package var priority: Float
        /// Set by courierd, not the app: the task was created while its app was in the background, so it is
        /// discretionary and does not start before the app's relaunch delay has passed (`startAfter`).
        package var createdInBackground: Bool?
        package var startAfter: Date?

        package init(
            identifier: Int,
            kind: Kind,
            request: TaskRequest,
            uploadFile: String? = nil,
            resumeData: Data? = nil,
            taskDescription: String? = nil,
            priority: Float = 0.5
        ) {
            self.identifier = identifier
            self.kind = kind
            self.request = request
            self.uploadFile = uploadFile
            self.resumeData = resumeData
            self.taskDescription = taskDescription
            self.priority = priority
        }
    }

    /// Answered once the task is in the journal.
    package struct CreateTask: Codable, Sendable, Equatable {
        package var request: UInt64
        package var session: String
        package var task: BackgroundTask

        package init(request: UInt64, session: String, task: BackgroundTask) {
            self.request = request
            self.session = session
            self.task = task
        }
    }

    package struct Command: Codable, Sendable, Equatable {
        package enum Verb: String, Codable, Sendable {
            case resume
            case suspend
            case cancel
            case cancelProducingResumeData
        }

        package var request: UInt64
        package var session: String
        package var task: Int
        package var verb: Verb

        package init(request: UInt64, session: String, task: Int, verb: Verb) {
            self.request = request
            self.session = session
            self.task = task
            self.verb = verb
        }
    }

    package struct ListTasks: Codable, Sendable, Equatable {
        package var request: UInt64
        package var session: String

        package init(request: UInt64, session: String) {
            self.request = request
            self.session = session
        }
    }

    /// The app's delegate has seen every event of `session` up to sequence number `through`.
    package struct Acknowledge: Codable, Sendable, Equatable {
        package var session: String
        package var through: UInt64

        package init(session: String, through: UInt64) {
            self.session = session
            self.through = through
        }
    }

    package struct CloseSession: Codable, Sendable, Equatable {
        package var request: UInt64
        package var session: String
        /// `invalidateAndCancel()`: cancel the session's tasks too.
        package var cancelTasks: Bool

        package init(request: UInt64, session: String, cancelTasks: Bool) {
            self.request = request
            self.session = session
            self.cancelTasks = cancelTasks
        }
    }

    /// What the daemon knows of one task (`getAllTasks`, `courier tasks`).
    package struct TaskSnapshot: Codable, Sendable, Equatable {
        package var identifier: Int
        package var taskDescription: String?
        /// ``SessionTask/State`` as its raw value.
        package var state: Int
        package var countOfBytesReceived: Int64
        package var countOfBytesExpectedToReceive: Int64
        package var countOfBytesSent: Int64
        package var countOfBytesExpectedToSend: Int64
        /// Why the task is not moving bytes (waiting for power, an unmetered network, a retry), if it is not.
        package var waitingReason: String?
        /// What the app asked for (an upload names the daemon's copy of its file): a relaunched app rebuilds its
        /// task objects from it.
        package var task: BackgroundTask?

        package init(
            identifier: Int,
            taskDescription: String? = nil,
            state: Int,
            countOfBytesReceived: Int64 = 0,
            countOfBytesExpectedToReceive: Int64 = -1,
            countOfBytesSent: Int64 = 0,
            countOfBytesExpectedToSend: Int64 = -1,
            waitingReason: String? = nil
        ) {
            self.identifier = identifier
            self.taskDescription = taskDescription
            self.state = state
            self.countOfBytesReceived = countOfBytesReceived
            self.countOfBytesExpectedToReceive = countOfBytesExpectedToReceive
            self.countOfBytesSent = countOfBytesSent
            self.countOfBytesExpectedToSend = countOfBytesExpectedToSend
            self.waitingReason = waitingReason
        }
    }

    /// Every background session the daemon keeps (`courier sessions`).
    package struct ListSessions: Codable, Sendable, Equatable {
        package var request: UInt64

        package init(request: UInt64) {
            self.request = request
        }
    }

    /// Asks courierd to stop (`courier daemon stop`); answered before it does. Running downloads resume at its next
    /// start.
    package struct StopDaemon: Codable, Sendable, Equatable {
        package var request: UInt64

        package init(request: UInt64) {
            self.request = request
        }
    }

    /// The user force-quit `app` (`courier kill APP`): the tasks of its sessions are cancelled with a reason, and it
    /// is not relaunched until it connects again by itself.
    package struct ForceQuit: Codable, Sendable, Equatable {
        package var request: UInt64
        package var app: String

        package init(request: UInt64, app: String) {
            self.request = request
            self.app = app
        }
    }

    /// The app moved between the foreground and the background. Tasks it creates in the background are
    /// discretionary and wait for its relaunch delay; coming to the foreground resets that delay.
    package struct AppState: Codable, Sendable, Equatable {
        package var inForeground: Bool

        package init(inForeground: Bool) {
            self.inForeground = inForeground
        }
    }

    /// One background session as `listSessions` describes it.
    package struct SessionSummary: Codable, Sendable, Equatable {
        package var identifier: String
        package var app: String
        /// An app holds the session open right now.
        package var connected: Bool
        /// Tasks not completed.
        package var activeTasks: Int
        /// Events the app has not acknowledged.
        package var pendingEvents: Int

        package init(identifier: String, app: String, connected: Bool, activeTasks: Int, pendingEvents: Int) {
            self.identifier = identifier
            self.app = app
            self.connected = connected
            self.activeTasks = activeTasks
            self.pendingEvents = pendingEvents
        }
    }

    package struct Reply: Codable, Sendable, Equatable {
        package enum Result: Codable, Sendable, Equatable {
            case sessionOpened(nextTaskIdentifier: Int)
            case taskCreated
            case done
            case tasks(snapshots: [TaskSnapshot])
            case sessions([SessionSummary])
            case registered(deviceToken: String?)
            case push(PushReceipt)
            case apps([AppSummary])
        }

        package var request: UInt64
        package var result: Result

        package init(request: UInt64, result: Result) {
            self.request = request
            self.result = result
        }
    }

    package struct Failure: Codable, Sendable, Equatable {
        /// The request refused; nil for a failure of the connection itself.
        package var request: UInt64?
        package var error: CourierError

        package init(request: UInt64?, error: CourierError) {
            self.request = request
            self.error = error
        }
    }

    /// The final response of a background task (after redirects): the head as received, every field line kept.
    package struct BackgroundResponse: Codable, Sendable, Equatable {
        package var url: String
        package var head: ResponseHead

        package var status: Int {
            head.status
        }

        package init(url: String, head: ResponseHead) {
            self.url = url
            self.head = head
        }

        private enum CodingKeys: String, CodingKey {
            case url, head
            /// The form journaled before the head was kept whole: a status and the fields joined by name.
            case status, headers
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            url = try container.decode(String.self, forKey: .url)
            if let head = try container.decodeIfPresent(ResponseHead.self, forKey: .head) {
                self.head = head
            } else {
                head = ResponseHead(
                    status: try container.decode(Int.self, forKey: .status),
                    fields: try container.decode([String: String].self, forKey: .headers)
                )
            }
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(url, forKey: .url)
            try container.encode(head, forKey: .head)
        }
    }

    /// A task event the app's delegate must hear, as journaled by the daemon.
    ///
    /// A task's events come in this order: `resumed` (after each restart of a download from a partial file),
    /// `wroteData` / `sentBodyData` (coalesced), then at its end `response` (when one arrived), `receivedData`
    /// (an upload's response body), `finishedDownloading` (a download that succeeded), and `completed`, exactly once.
    package enum BackgroundEvent: Codable, Sendable, Equatable {
        case wroteData(delta: Int64, total: Int64, expected: Int64)
        case sentBodyData(delta: Int64, total: Int64, expected: Int64)
        case resumed(offset: Int64, expectedTotal: Int64)
        case response(BackgroundResponse)
        /// An upload's response body (at most ``BackgroundEvent/maximumBodyLength`` bytes are kept).
        case receivedData(Data)
        /// The file is the app's until its delegate returns; the daemon deletes it after the acknowledgement.
        case finishedDownloading(path: String)
        case completed(error: CourierError?)

        /// The longest upload response body the daemon journals; the rest is dropped.
        package static let maximumBodyLength = 1 << 20
    }

    package struct SequencedEvent: Codable, Sendable, Equatable {
        /// Increasing per session, never reused.
        package var sequence: UInt64
        package var task: Int
        package var event: BackgroundEvent

        package init(sequence: UInt64, task: Int, event: BackgroundEvent) {
            self.sequence = sequence
            self.task = task
            self.event = event
        }
    }

    package struct Events: Codable, Sendable, Equatable {
        package var session: String
        package var events: [SequencedEvent]
        /// True when this frame holds the last pending event (`urlSessionDidFinishEvents` follows it).
        package var finished: Bool

        package init(session: String, events: [SequencedEvent], finished: Bool) {
            self.session = session
            self.events = events
            self.finished = finished
        }
    }
}
