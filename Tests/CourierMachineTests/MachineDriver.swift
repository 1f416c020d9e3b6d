import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Drives one ``TaskMachine`` with hand-made inputs at a clock that only moves when a test advances it.
///
/// Conventions: hop N's transfer is `100 + N` (``transfer(_:)``); the task starts at ``epoch``; `start` resumes,
/// answers `.start` with `.started` and adopts hop 1's transfer, as ``SessionTask`` does.
struct MachineDriver {
    static let epoch = Date(timeIntervalSinceReferenceDate: 800_000_000)
    static let url = "https://a.example/resource"
    static let stagingFile = URL(fileURLWithPath: "/nonexistent/courier-machine-tests/staging.download")
    /// A download made from resume data: 100 bytes on disk of a 1000-byte entity.
    static let resume = ResumeData(
        format: ResumeData.currentFormat,
        url: "https://a.example/big.bin",
        originalURL: "https://a.example/start",
        method: "GET",
        headers: ["X-Client": "machine-tests"],
        file: "courier-partial.partial",
        bytesOnDisk: 100,
        validator: "\"v1\"",
        expectedLength: 1000
    )

    var machine: TaskMachine
    var now = MachineDriver.epoch
    /// What `start` handed the machine with `.started`.
    var staging: URL?
    var deadline: Date?

    init(_ machine: TaskMachine) {
        self.machine = machine
    }

    // MARK: Roles

    static func make(
        _ kind: SessionTask.Kind,
        collectsBody: Bool = false,
        asksDisposition: Bool = false,
        _ request: URLRequest
    ) -> MachineDriver {
        let role = TaskMachine.Role(kind: kind, collectsBody: collectsBody, asksDisposition: asksDisposition)
        return MachineDriver(TaskMachine(role: role, request: TaskRequest(request)))
    }

    /// A data task with a completion handler: keeps its body.
    static func collecting(_ request: URLRequest = request(url)) -> MachineDriver {
        make(.data, collectsBody: true, request)
    }

    /// A data task of a session with a `SessionDataDelegate`: asks the disposition of its final response.
    static func asking(_ request: URLRequest = request(url)) -> MachineDriver {
        make(.data, asksDisposition: true, request)
    }

    /// A data task whose body is delivered as it comes (`bytes(for:)`).
    static func streaming(_ request: URLRequest = request(url)) -> MachineDriver {
        make(.data, request)
    }

    static func download(_ request: URLRequest = request(url)) -> MachineDriver {
        make(.download, request)
    }

    /// An upload with a completion handler; the shell sets `expectedToSend` from the body's length.
    static func upload(_ request: URLRequest = request(url, method: "PUT"), bodyLength: Int64) -> MachineDriver {
        var driver = make(.upload, collectsBody: true, request)
        driver.machine.expectedToSend = bodyLength
        return driver
    }

    /// A download made from resume data, as `Session.makeResumedTask` makes it.
    static func resumedDownload(_ resume: ResumeData = resume) -> MachineDriver {
        var driver = make(.download, resumedRequest(resume))
        driver.machine.resumeSource = resume
        if let original = resume.originalURL.flatMap(URL.init(string:)) {
            driver.machine.originalRequest = TaskRequest(url: original)
        }
        return driver
    }

    static func resumedRequest(_ resume: ResumeData = resume) -> URLRequest {
        request(resume.url, headers: resume.headers)
    }

    // MARK: Values

    static func request(
        _ url: String,
        method: String? = nil,
        headers: [String: String] = [:],
        body: Data? = nil
    ) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        if let method {
            request.httpMethod = method
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        if let body {
            request.httpBody = body
        }
        return request
    }

    static func head(_ status: Int, _ fields: [String: String] = [:], cookies: [String] = []) -> ResponseHead {
        ResponseHead(status: status, httpVersion: "HTTP/1.1", fields: fields, setCookies: cookies)
    }

    static func response(_ url: String, _ head: ResponseHead) -> TaskResponse {
        TaskResponse(url: URL(string: url)!, head: head)
    }

    /// The backend handle of hop `hop`.
    static func transfer(_ hop: Int) -> UInt64 {
        UInt64(100 + hop)
    }

    static func metrics(_ totalMicroseconds: Int64) -> TransferMetrics {
        var metrics = TransferMetrics()
        metrics.totalMicroseconds = totalMicroseconds
        return metrics
    }

    static func event(
        hop: Int,
        _ payload: TransferEvent.Payload,
        progress: TransferProgress = TransferProgress()
    ) -> TransferEvent {
        TransferEvent(id: TransferID(task: 42, hop: hop), transfer: transfer(hop), progress: progress, payload: payload)
    }

    static func cancelled(_ url: String, _ message: String = "cancelled") -> TaskOutcome {
        .failure(CourierError(.cancelled, message, failingURL: URL(string: url)!))
    }

    /// The plan the machine should submit for hop `hop`, with what `start` handed it.
    func plan(
        hop: Int,
        _ request: URLRequest,
        resumeOffset: Int64 = 0,
        authentication: TransferSpec.Authentication = .none,
        resume: ResumeData? = nil
    ) -> HopPlan {
        HopPlan(
            hop: hop,
            request: TaskRequest(request),
            resumeOffset: resumeOffset,
            authentication: authentication,
            priority: SessionTask.defaultPriority,
            resourceDeadline: deadline,
            staging: staging,
            resume: resume,
            holdsResponse: machine.role.asksDisposition,
            collectsBody: machine.role.collectsBody
        )
    }

    // MARK: Driving

    @discardableResult
    mutating func apply(_ input: TaskInput) -> [TaskAction] {
        machine.apply(input, at: now)
    }

    mutating func advance(by seconds: TimeInterval) {
        now = now.addingTimeInterval(seconds)
    }

    /// `.resume` → `.start`, then `.started` (returned: the actions, normally `.submit` of hop 1), then
    /// `.submitted(hop: 1, transfer: 101)` unless `adopt` is false.
    @discardableResult
    mutating func start(
        resumeOffset: Int64 = 0,
        timeout: TimeInterval = 60,
        adopt: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [TaskAction] {
        #expect(apply(.resume) == [.start], sourceLocation: sourceLocation)
        staging = machine.role.kind == .download ? Self.stagingFile : nil
        deadline = now.addingTimeInterval(timeout)
        let actions = apply(.started(resumeOffset: resumeOffset, staging: staging, resourceDeadline: deadline))
        if adopt {
            #expect(apply(.submitted(hop: 1, transfer: Self.transfer(1))) == [], sourceLocation: sourceLocation)
        }
        return actions
    }

    @discardableResult
    mutating func respond(
        hop: Int = 1,
        _ head: ResponseHead,
        held: Bool,
        resumeOffset: Int64 = 0,
        progress: TransferProgress = TransferProgress()
    ) -> [TaskAction] {
        let payload = TransferEvent.Payload.response(held: held, resumeOffset: resumeOffset, head: head)
        return apply(.event(hop: hop, Self.event(hop: hop, payload, progress: progress)))
    }

    @discardableResult
    mutating func data(hop: Int = 1, _ text: String, progress: TransferProgress = TransferProgress()) -> [TaskAction] {
        apply(.event(hop: hop, Self.event(hop: hop, .data(Data(text.utf8)), progress: progress)))
    }

    @discardableResult
    mutating func progress(hop: Int = 1, _ progress: TransferProgress) -> [TaskAction] {
        apply(.event(hop: hop, Self.event(hop: hop, .progress, progress: progress)))
    }

    @discardableResult
    mutating func complete(
        hop: Int = 1,
        _ completion: TransferCompletion,
        progress: TransferProgress = TransferProgress()
    ) -> [TaskAction] {
        apply(.event(hop: hop, Self.event(hop: hop, .complete(completion), progress: progress)))
    }

    /// A held 3xx on `hop`, answered with the proposed request, and the next hop's transfer adopted. Returns the
    /// actions of the answer.
    @discardableResult
    mutating func followRedirect(
        hop: Int,
        status: Int = 302,
        to location: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [TaskAction] {
        let asked = respond(hop: hop, Self.head(status, ["Location": location]), held: true)
        guard case .ask(.redirect(let askedHop, _, let proposed))? = asked.last, askedHop == hop else {
            Issue.record("no redirect question for hop \(hop): \(asked)", sourceLocation: sourceLocation)
            return []
        }
        let actions = apply(.redirectAnswered(hop: hop, proposed))
        #expect(apply(.submitted(hop: hop + 1, transfer: Self.transfer(hop + 1))) == [], sourceLocation: sourceLocation)
        return actions
    }

    /// A held 401 on `hop` with `challenge`, answered with `user`/`password`, and the retry's transfer adopted.
    @discardableResult
    mutating func answerChallenge(
        hop: Int,
        _ challenge: String = "Basic realm=\"r\"",
        user: String = "user",
        password: String = "secret",
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [TaskAction] {
        let asked = respond(hop: hop, Self.head(401, ["WWW-Authenticate": challenge]), held: true)
        guard case .ask(.challenge(hop, _))? = asked.last else {
            Issue.record("no challenge for hop \(hop): \(asked)", sourceLocation: sourceLocation)
            return []
        }
        let actions = apply(.challengeAnswered(hop: hop, .credential(user: user, password: password)))
        #expect(apply(.submitted(hop: hop + 1, transfer: Self.transfer(hop + 1))) == [], sourceLocation: sourceLocation)
        return actions
    }
}

extension TransferCompletion {
    static func success(bytesOnDisk: Int64 = 0, metrics: TransferMetrics = TransferMetrics()) -> TransferCompletion {
        TransferCompletion(error: nil, bytesOnDisk: bytesOnDisk, metrics: metrics)
    }

    /// What the backend reports for a transfer it was told to cancel.
    static func cancelled(bytesOnDisk: Int64 = 0, metrics: TransferMetrics = TransferMetrics()) -> TransferCompletion {
        TransferCompletion(
            error: CourierError(.cancelled, "cancelled by the backend"),
            bytesOnDisk: bytesOnDisk,
            metrics: metrics
        )
    }

    static func failure(_ code: CourierError.Code, _ message: String = "") -> TransferCompletion {
        TransferCompletion(error: CourierError(code, message))
    }

    static let timedOut = TransferCompletion.failure(.timedOut, "no byte moved for 60 s")
}

extension TaskAction {
    /// True for `.finish`: tests count them.
    var isFinish: Bool {
        if case .finish = self {
            return true
        }
        return false
    }

    var isSubmit: Bool {
        if case .submit = self {
            return true
        }
        return false
    }
}
