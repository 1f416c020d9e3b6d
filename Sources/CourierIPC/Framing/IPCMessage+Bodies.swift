package import Foundation

/// The bodies of the messages of `docs/ipc.md`, each a JSON object in version 1 of the protocol and a record in
/// version 2.
extension IPCMessage {
    /// The app introduces itself (its first frame on a connection).
    package struct Hello: Codable, Sendable, Equatable {
        package var app: String
        package var pid: Int32
        /// The argv that relaunches the app in the background; nil when it cannot be relaunched.
        package var launchCommand: [String]?
        /// Whether the app is in the foreground (``AppState`` tells of later changes); nil counts as the foreground.
        package var inForeground: Bool?
        /// The newest protocol version the app reads (nil, from an earlier Courier: 1); courierd writes to it in the
        /// newest version both read.
        package var protocolVersion: UInt16?

        package init(
            app: String,
            pid: Int32,
            launchCommand: [String]? = nil,
            inForeground: Bool? = nil,
            protocolVersion: UInt16? = IPCFrame.newestVersion
        ) {
            self.app = app
            self.pid = pid
            self.launchCommand = launchCommand
            self.inForeground = inForeground
            self.protocolVersion = protocolVersion
        }
    }

    /// courierd's answer to `hello`: which courierd this is (`courier daemon status` shows it).
    package struct Welcome: Codable, Sendable, Equatable {
        package var daemonVersion: String
        /// The newest protocol version courierd reads (1 from a courierd older than version 2): the app writes to it
        /// in the newest version both read.
        package var protocolVersion: UInt16
        /// The rest is absent from a courierd older than these fields.
        package var pid: Int32?
        package var executable: String?
        package var runtimeDirectory: String?
        package var stateDirectory: String?
        package var startedAt: Date?
        /// What courierd did and holds when the connection opened (absent from an older courierd).
        package var figures: DaemonFigures?

        package init(
            daemonVersion: String,
            protocolVersion: UInt16 = IPCFrame.newestVersion,
            pid: Int32? = nil,
            executable: String? = nil,
            runtimeDirectory: String? = nil,
            stateDirectory: String? = nil,
            startedAt: Date? = nil
        ) {
            self.daemonVersion = daemonVersion
            self.protocolVersion = protocolVersion
            self.pid = pid
            self.executable = executable
            self.runtimeDirectory = runtimeDirectory
            self.stateDirectory = stateDirectory
            self.startedAt = startedAt
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
        /// `httpMaximumConnectionsPerHost`; nil (a session opened by an earlier Courier): courierd's default.
        package var maximumConnectionsPerHost: Int?
        /// `trustedCertificateAuthorities` when it is `.pem`: the CA certificates courierd verifies this session's
        /// servers with instead of the system's; nil: the system's.
        package var trustedCertificatesPEM: Data?

        package init(
            request: UInt64,
            identifier: String,
            sendsLaunchEvents: Bool = true,
            isDiscretionary: Bool = false,
            allowsExpensiveNetworkAccess: Bool = true,
            resourceTimeout: Double = 7 * 24 * 3600,
            requestTimeout: Double = 60,
            additionalHeaders: [String: String] = [:],
            maximumConnectionsPerHost: Int? = nil,
            trustedCertificatesPEM: Data? = nil
        ) {
            self.request = request
            self.identifier = identifier
            self.sendsLaunchEvents = sendsLaunchEvents
            self.isDiscretionary = isDiscretionary
            self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
            self.resourceTimeout = resourceTimeout
            self.requestTimeout = requestTimeout
            self.additionalHeaders = additionalHeaders
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.trustedCertificatesPEM = trustedCertificatesPEM
        }
    }

    /// One background task: downloads, and uploads from a file (background sessions make no data tasks).
    ///
    /// What the app sends is the seam's own value: the ``TransferSpec`` its task layer built for the task's exchange
    /// (URL, method, every header line in order, the upload's file) with the task's details (kind, description,
    /// priority, resume data), as the in-process and serialised backends receive it.
    package struct BackgroundTask: Codable, Sendable, Equatable {
        package var identifier: Int
        package var spec: TransferSpec
        /// Set by courierd, not the app: the task was created while its app was in the background, so it is
        /// discretionary and does not start before the app's relaunch delay has passed (`startAfter`).
        package var createdInBackground: Bool?
        package var startAfter: Date?

        package init(identifier: Int, spec: TransferSpec) {
            self.identifier = identifier
            self.spec = spec
        }

        /// A task from its parts (a download, or an upload of `uploadFile`): the earlier form (``Parts``).
        package init(
            identifier: Int,
            kind: TransferSpec.TaskDetails.Kind,
            request: TaskRequest,
            uploadFile: String? = nil,
            resumeData: Data? = nil,
            taskDescription: String? = nil,
            priority: Float = 0.5
        ) {
            var spec = TransferSpec(url: request.url?.absoluteString ?? "")
            spec.method = request.method
            spec.headers = request.headerFields.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            if let uploadFile {
                spec.body = .file(path: uploadFile)
            }
            spec.task = TransferSpec.TaskDetails(
                kind: kind,
                taskDescription: taskDescription,
                priority: priority,
                resumeData: resumeData
            )
            self.init(identifier: identifier, spec: spec)
        }

        package var kind: TransferSpec.TaskDetails.Kind {
            spec.task?.kind ?? (uploadFile == nil ? .download : .upload)
        }

        /// The request the spec describes (repeated header lines joined, as `URLRequest.addValue` does).
        package var request: TaskRequest {
            var fields: [String: String] = [:]
            for line in spec.headers {
                guard let (name, value) = TransferSpec.field(of: line) else {
                    continue
                }
                if let key = fields.keys.first(where: { $0.caseInsensitiveEquals(name) }) {
                    fields[key] = "\(fields[key] ?? ""),\(value)"
                } else {
                    fields[name] = value
                }
            }
            return TaskRequest(url: URL(string: spec.url), method: spec.method, headerFields: fields)
        }

        /// The file an upload sends (after admission, courierd's own copy).
        package var uploadFile: String? {
            get {
                if case .file(let path) = spec.body { path } else { nil }
            }
            set {
                spec.body = newValue.map { .file(path: $0) } ?? .none
            }
        }

        package var resumeData: Data? { spec.task?.resumeData }
        package var taskDescription: String? { spec.task?.taskDescription }
        package var priority: Float { spec.task?.priority ?? 0.5 }
        package var earliestBeginDate: Date? { spec.task?.earliestBeginDate }

        /// The delayed start is decided: the task begins now, with `request` (its URL, method and header fields)
        /// instead of its own when one is given.
        package mutating func beginDelayed(with request: TaskRequest?) {
            spec.task?.earliestBeginDate = nil
            guard let request else {
                return
            }
            if let url = request.url {
                spec.url = url.absoluteString
            }
            spec.method = request.method
            spec.headers = request.headerFields.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        }

        /// A task in its earlier form, its parts instead of a spec: as an app built before the spec was sent whole
        /// writes it (protocol version 1 still takes it) and a journal written then holds it.
        package struct Parts: Decodable, Sendable {
            var kind: TransferSpec.TaskDetails.Kind
            var request: TaskRequest
            var uploadFile: String?
            var resumeData: Data?
            var taskDescription: String?
            var priority: Float?

            /// The task these parts describe.
            package func task(identifier: Int) -> BackgroundTask {
                BackgroundTask(
                    identifier: identifier,
                    kind: kind,
                    request: request,
                    uploadFile: uploadFile,
                    resumeData: resumeData,
                    taskDescription: taskDescription,
                    priority: priority ?? 0.5
                )
            }
        }

        private enum CodingKeys: String, CodingKey {
            case identifier, spec, createdInBackground, startAfter
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let identifier = try container.decode(Int.self, forKey: .identifier)
            if let spec = try container.decodeIfPresent(TransferSpec.self, forKey: .spec) {
                self.init(identifier: identifier, spec: spec)
            } else {
                self = try Parts(from: decoder).task(identifier: identifier)
            }
            createdInBackground = try container.decodeIfPresent(Bool.self, forKey: .createdInBackground)
            startAfter = try container.decodeIfPresent(Date.self, forKey: .startAfter)
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(identifier, forKey: .identifier)
            try container.encode(spec, forKey: .spec)
            try container.encodeIfPresent(createdInBackground, forKey: .createdInBackground)
            try container.encodeIfPresent(startAfter, forKey: .startAfter)
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
            /// The app's answer to a delayed task's `delayedStart`: begin, with ``newRequest`` when set.
            case beginDelayed
        }

        package var request: UInt64
        package var session: String
        package var task: Int
        package var verb: Verb
        /// `beginDelayed`'s `.useNewRequest`: the request the task begins with instead of its own.
        package var newRequest: TaskRequest?

        package init(request: UInt64, session: String, task: Int, verb: Verb, newRequest: TaskRequest? = nil) {
            self.request = request
            self.session = session
            self.task = task
            self.verb = verb
            self.newRequest = newRequest
        }
    }

    package struct ListTasks: Codable, Sendable, Equatable {
        package var request: UInt64
        package var session: String
        /// Also the tasks whose apps have heard their end, from the history (oldest first, before the others); nil
        /// (an older client) is false.
        package var includesEnded: Bool?
        /// A page of the list: `limit` snapshots from position `offset` (nil, an older client: the whole list, which
        /// courierd refuses when it does not fit in one frame).
        package var offset: Int?
        package var limit: Int?

        /// The snapshots a page holds: about 1 KiB each with its spec, so a page is well inside a frame.
        package static let pageSize = 1_000

        package init(
            request: UInt64,
            session: String,
            includesEnded: Bool = false,
            offset: Int? = nil,
            limit: Int? = nil
        ) {
            self.request = request
            self.session = session
            self.includesEnded = includesEnded ? true : nil
            self.offset = offset
            self.limit = limit
        }

        /// The whole list, a page at a time: `fetch(offset, limit)` answers one page; a short page is the last.
        package static func allPages<Failure: Error>(
            _ fetch: (_ offset: Int, _ limit: Int) throws(Failure) -> [TaskSnapshot]
        ) throws(Failure) -> [TaskSnapshot] {
            var snapshots: [TaskSnapshot] = []
            while true {
                let page = try fetch(snapshots.count, pageSize)
                snapshots += page
                if page.count < pageSize {
                    return snapshots
                }
            }
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
        /// How a completed task ended, while its app has not heard of it: nil (succeeded), or the error (a cancel
        /// says `cancelled`, with the reason when the user force-quit the app).
        package var outcome: CourierError?
        /// When its app heard of its end; set on the tasks of the history only (``ListTasks/includesEnded``).
        package var endedAt: Date?
        /// The status of a completed task's final response, when one arrived (`outcome` is nil for a 404: the
        /// task succeeded as URLSession counts it).
        package var statusCode: Int?

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

    /// The app moved between the foreground and the background, or its lifecycle is about to stop the process
    /// (suspended) or it was continued. Tasks it creates in the background are discretionary and wait for its relaunch
    /// delay; coming to the foreground resets that delay. `suspended` is written before the process stops, so
    /// courierd knows a stopped instance from the moment it stops, without looking (nil: not said).
    package struct AppState: Codable, Sendable, Equatable {
        package var inForeground: Bool
        package var suspended: Bool?

        package init(inForeground: Bool, suspended: Bool? = nil) {
            self.inForeground = inForeground
            self.suspended = suspended
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

    /// courierd's record of a background task's final exchange (after redirects): where it went, the head as
    /// received (every field line kept) and its timings. Journaled with checkpoints (the entity's response) and, from
    /// a journal written before events were the seam's own, as a response event.
    package struct BackgroundResponse: Codable, Sendable, Equatable {
        package var url: String
        package var head: ResponseHead
        /// The exchange as the engine measured it; nil when not known.
        package var metrics: TransferMetrics?

        package var status: Int {
            head.status
        }

        package init(url: String, head: ResponseHead, metrics: TransferMetrics? = nil) {
            self.url = url
            self.head = head
            self.metrics = metrics
        }

        private enum CodingKeys: String, CodingKey {
            case url, head, metrics
            /// The form journaled before the head was kept whole: a status and the fields joined by name.
            case status, headers
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            url = try container.decode(String.self, forKey: .url)
            metrics = try container.decodeIfPresent(TransferMetrics.self, forKey: .metrics)
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
            try container.encodeIfPresent(metrics, forKey: .metrics)
        }
    }

    /// A task event the app's delegate must hear, as courierd journals and sends it: the seam's own event, a
    /// ``TransferEvent``'s counters and payload, which the app's daemon backend hands to the task layer as the
    /// in-process engine's would be.
    ///
    /// A task's events come in this order: `resumed` (after each restart of a download from a partial file),
    /// `progress` (coalesced), then at its end `relocated` and `response` (when a response arrived), `data` (an
    /// upload's response body), `downloaded` (a download that succeeded), and `complete`, exactly once.
    package struct BackgroundEvent: Codable, Sendable, Equatable {
        package var progress: TransferProgress
        package var payload: TransferEvent.Payload

        /// The longest upload response body the daemon journals; the rest is dropped.
        package static let maximumBodyLength = 1 << 20

        package init(_ payload: TransferEvent.Payload, progress: TransferProgress) {
            self.payload = payload
            self.progress = progress
        }

        /// The events of a final exchange: where courierd's redirects led (when they led away from `requested`), then
        /// the response.
        package static func response(
            _ response: BackgroundResponse,
            requested: String,
            progress: TransferProgress
        ) -> [BackgroundEvent] {
            let head = BackgroundEvent(.response(held: false, resumeOffset: 0, head: response.head), progress: progress)
            guard response.url != requested else {
                return [head]
            }
            return [BackgroundEvent(.relocated(url: response.url), progress: progress), head]
        }

        /// The task's last event: it succeeded (`error` nil) or failed, after `response` when one arrived.
        package static func complete(
            _ error: CourierError?,
            response: BackgroundResponse?,
            progress: TransferProgress
        ) -> BackgroundEvent {
            let completion = TransferCompletion(
                error: error,
                metrics: response?.metrics ?? TransferMetrics(),
                finalStatus: response?.status
            )
            return BackgroundEvent(.complete(completion), progress: progress)
        }

        /// The event a task ended with, if this is it.
        package var completion: TransferCompletion? {
            if case .complete(let completion) = payload { completion } else { nil }
        }
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
