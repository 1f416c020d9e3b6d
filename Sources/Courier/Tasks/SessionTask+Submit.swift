import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// Checks a request before anything is submitted.
    package static func validate(_ request: TaskRequest?) -> CourierError? {
        guard let url = request?.url else {
            return CourierError(.badURL, "the request has no URL")
        }
        guard let scheme = url.scheme?.lowercased() else {
            return CourierError(.badURL, "the URL is not absolute", failingURL: url)
        }
        guard scheme == "http" || scheme == "https" || UnixSocketURL.schemes.contains(scheme) else {
            return CourierError(.unsupportedURL, "unsupported URL scheme \"\(scheme)\"", failingURL: url)
        }
        guard let host = url.host, !host.isEmpty else {
            return CourierError(.badURL, "the URL has no host", failingURL: url)
        }
        return nil
    }

    /// ``TaskAction/start``: register, check the request, prepare the files; then let the machine submit the first
    /// hop.
    func start(work: inout DelegateWork) {
        guard core.register(self, key: registryKey) else {
            let error = CourierError(.sessionInvalidated, "the session was invalidated", failingURL: currentURL)
            send(.failed(error), work: &work)
            return
        }
        let (method, url) = storage.withLock { ($0.currentRequest?.method ?? "GET", $0.currentURL) }
        if let span = core.telemetry.taskStarted(method: method, url: url) {
            storage.withLock { $0.span = span }
        }
        switch prepare() {
        case .success(let (resumeOffset, staging)):
            let deadline = Date().addingTimeInterval(core.configuration.timeoutIntervalForResource)
            send(.started(resumeOffset: resumeOffset, staging: staging, resourceDeadline: deadline), work: &work)
        case .failure(let error):
            send(.failed(error), work: &work)
        }
    }

    /// Checks what the first hop needs; for a download, makes the staging file or claims the partial file of the
    /// resume data. Returns the offset to resume from and the staging file.
    private func prepare() -> Result<(Int64, URL?), CourierError> {
        let (request, resumeSource, resumeError) = storage.withLock { machine in
            (machine.currentRequest, machine.resumeSource, machine.resumeSourceError)
        }
        if let resumeError {
            return .failure(resumeError)
        }
        if let error = SessionTask.validate(request) {
            return .failure(error)
        }
        if case .webSocket = sink, core.configuration.identifier != nil {
            return .failure(
                CourierError(
                    .unsupportedInBackgroundSession,
                    "background sessions run download and upload tasks, not WebSocket tasks",
                    failingURL: request?.url
                )
            )
        }
        if case .data(let body) = uploadBody, core.configuration.identifier != nil {
            // Beyond Apple: a background upload from `Data` sends a file the app writes once (courierd copies it at
            // admission, as any upload's file); it is the task's staging file, removed at its end.
            return core.makeStagingFile().flatMap { spool in
                do {
                    try body.write(to: spool)
                    return .success((0, spool))
                } catch {
                    try? FileManager.default.removeItem(at: spool)
                    return .failure(
                        CourierError(.cannotCreateFile, "cannot write the upload's body to \(spool.path): \(error)")
                    )
                }
            }
        }
        if case .file(let url) = uploadBody {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else {
                return .failure(
                    CourierError(.fileDoesNotExist, "the upload file does not exist: \(url.path)", failingURL: url)
                )
            }
        }
        guard kind == .download else {
            return .success((0, nil))
        }
        // A background session's resume data names courierd's partial file: courierd resumes it (the resume data
        // goes along with the task); the app's staging file only receives the finished download.
        if let resumeSource, core.configuration.identifier == nil {
            return claimPartialFile(resumeSource).map { (resumeSource.bytesOnDisk, $0) }
        }
        return core.makeStagingFile().map { (0, $0) }
    }

    /// Whether a request of `method` (upper case) carries the task's body: GET and HEAD never do (a 303 made the
    /// hop a GET).
    static func sendsBody(method: String) -> Bool {
        method != "GET" && method != "HEAD"
    }

    /// ``TaskAction/submit(_:)``: hands the hop to the session's backend and tells the machine how it went.
    func submit(_ plan: HopPlan, work: inout DelegateWork) {
        let submitted = core.backend().flatMap { backend in
            transferSpec(for: plan, at: Date()).flatMap { spec in
                backend.submit(spec, as: TransferID(task: registryKey, hop: plan.hop)).map { ($0, spec) }
            }
        }
        switch submitted {
        case .success(let (transfer, spec)):
            send(.submitted(hop: plan.hop, transfer: transfer), work: &work)
            // A hop that stops for a server-trust judgement before its request needs no body: the stream is read by
            // the same hop submitted again.
            let judged = spec.connection?.trust == .ask || spec.connection?.trust == .probe
            if case .streamed = spec.body, !judged {
                startBodyStream(hop: plan.hop, transfer: transfer, bodyOffset: plan.bodyOffset, work: &work)
            }
            core.logger?.trace(
                "submitted",
                metadata: ["task": "\(taskIdentifier)", "hop": "\(plan.hop)", "transfer": "\(transfer)"]
            )
        case .failure(let error):
            send(.submitFailed(hop: plan.hop, error), work: &work)
        }
    }

    /// The backend's description of one hop: the request with the session's headers, cookies, timeouts, body and
    /// sink.
    func transferSpec(for plan: HopPlan, at now: Date) -> Result<TransferSpec, CourierError> {
        let request = plan.request
        guard let requestURL = request.url else {
            return .failure(CourierError(.badURL, "the request has no URL"))
        }
        let configuration = core.configuration
        // HSTS: a known host's http URL goes out as https, before anything is sent.
        let url = configuration.hstsStorage?.upgrade(requestURL) ?? requestURL
        var spec = TransferSpec(url: UnixSocketURL.engineURL(url) ?? SessionTask.engineURL(url))
        spec.method = request.method.uppercased()
        // HTTP/2 is offered through ALPN only; on plain http the flag would only make curl wait (PIPEWAIT) for a
        // connection that can never multiplex.
        spec.http2 = configuration.allowsHTTP2 && url.scheme?.lowercased() == "https"
        spec.authentication = plan.authentication
        spec.proxyAuthentication = plan.proxyAuthentication
        if let proxies = configuration.proxySettings {
            spec.proxy = proxies.proxy(for: url)
            spec.noProxy = proxies.exceptions
        }
        spec.connection = core.connectionOptions(for: url, taskHasOwnDelegate: plan.hasOwnDelegate)
        spec.priority = Int32(plan.priority * 1000)
        spec.maximumBytesPerSecond = plan.maximumBytesPerSecond ?? 0

        // Timeouts: idle from the configuration or a smaller request timeout; the resource deadline as a total.
        var idle = configuration.timeoutIntervalForRequest
        if request.timeoutInterval > 0 && request.timeoutInterval < idle {
            idle = request.timeoutInterval
        }
        spec.idleTimeoutMilliseconds = idle > 0 ? Int64((idle * 1000).rounded(.up)) : 0
        if let deadline = plan.resourceDeadline {
            let remaining = deadline.timeIntervalSince(now)
            guard remaining > 0 else {
                return .failure(CourierError(.timedOut, "the resource timeout expired", failingURL: url))
            }
            spec.totalTimeoutMilliseconds = max(1, Int64((remaining * 1000).rounded(.up)))
        }

        spec.headers = headerLines(for: request, url: url, plan: plan)
        // A range continues the bytes already on disk, which were never encoded (resume data is made only for
        // an entity without a content coding): decode nothing.
        spec.decodesContent = plan.resumeOffset == 0 && plan.resume?.segments == nil

        let sendsBody = SessionTask.sendsBody(method: spec.method)
        if let uploadBody, sendsBody {
            switch uploadBody {
            case .data(let data):
                if let spool = plan.staging {
                    spec.body = .file(path: spool.path)  // a background upload's body, written to a file (prepare)
                } else {
                    spec.body = .data(plan.bodyOffset > 0 ? Data(data.dropFirst(Int(plan.bodyOffset))) : data)
                }
            case .file(let fileURL):
                spec.body = .file(path: fileURL.path)
                spec.bodyOffset = plan.bodyOffset
            case .stream(_, let length):
                spec.body = .streamed(length: length.map { $0 - plan.bodyOffset })
            case .heldByDaemon:
                break
            }
        } else if let body = request.body, !body.isEmpty, sendsBody {
            spec.body = .data(body)
        }
        spec.noBody = spec.method == "HEAD"

        if kind == .download {
            guard let staging = plan.staging else {
                return .failure(CourierError(.cannotCreateFile, "no staging file", failingURL: url))
            }
            let (checksum, segments, hashing) = storage.withLock {
                ($0.expectedChecksum, $0.maximumSegments, $0.fileDigestAlgorithm)
            }
            spec.segments = min(segments ?? configuration.maximumSegmentsPerDownload, DownloadSegment.maximumCount)
            spec.segmentMap = plan.resume?.segments
            spec.sink = .file(path: staging.path, append: plan.resumeOffset > 0 || spec.segmentMap != nil)
            spec.resumeOffset = plan.resumeOffset
            spec.digest = checksum?.algorithm ?? hashing
            spec.announcedDigest = spec.digest == nil
            // A resumed download holds its response so that a 416 "already complete" is not written to the file.
            spec.askResponse = plan.resumeOffset > 0
        } else {
            spec.sink = .memory
            spec.askResponse = plan.holdsResponse
            if plan.collectsBody, let limit = configuration.maximumCollectedBodyLength {
                spec.maximumBodyLength = Int64(max(limit, 0))
            }
        }
        if configuration.identifier != nil {
            spec.task = backgroundDetails()
        }
        if case .webSocket = sink {
            // The handshake's exchange carries the connection: HTTP/1.1, the frames as its body, no total timeout.
            spec.upgrade = true
            spec.body = .streamed(length: nil)
            spec.http2 = false
            spec.decodesContent = false
            spec.totalTimeoutMilliseconds = 0
        }
        if case .observer(_, let template) = sink {
            SessionTask.follow(template, in: &spec)
        }
        return .success(spec)
    }

    /// A hop of courierd's attempt goes as the app's task built it (`template`): the app's proxy, HTTP/2 setting and
    /// connection options (TLS versions, pins, client certificate, targeting);
    /// for a hop to the template's URL, the template's header lines in their order (repeated fields apart), then the
    /// lines this hop adds (a range and its validator to resume, conditions) that the template does not name. The
    /// template's own range fields give way to the hop's: they described where the app's attempt began.
    static func follow(_ template: TransferSpec, in spec: inout TransferSpec) {
        spec.http2 = template.http2
        if spec.proxy == nil {
            spec.proxy = template.proxy
            spec.noProxy = template.noProxy
        }
        if spec.proxyAuthentication == .none {
            spec.proxyAuthentication = template.proxyAuthentication
        }
        if spec.connection == nil {
            spec.connection = template.connection
        }
        guard spec.url == template.url else {
            // A redirect: its fields are the redirect policy's (credentials and cookies stay with their origin).
            return
        }
        let hopOwned: Set<String> = ["range", "if-range"]
        var lines: [String] = []
        var named = Set<String>()
        for line in template.headers {
            let name = TransferSpec.fieldName(of: line)
            guard !hopOwned.contains(name) else {
                continue
            }
            named.insert(name)
            lines.append(line)
        }
        for line in spec.headers {
            let name = TransferSpec.fieldName(of: line)
            if hopOwned.contains(name) || !named.contains(name) {
                lines.append(line)
            }
        }
        spec.headers = lines
    }

    /// The task as a background backend keeps it: its kind, description, priority, resume data and the options
    /// courierd applies to its attempts.
    private func backgroundDetails() -> TransferSpec.TaskDetails {
        let kind: TransferSpec.TaskDetails.Kind =
            switch self.kind {
            case .data: .data
            case .upload: .upload
            case .download: .download
            }
        var reportsToDelegate = false
        if case .delegate = sink {
            reportsToDelegate = true
        }
        let (details, resumeSource) = storage.withLock { machine in
            (
                TransferSpec.TaskDetails(
                    kind: kind,
                    taskDescription: machine.taskDescription,
                    priority: machine.priority,
                    reportsToDelegate: reportsToDelegate,
                    earliestBeginDate: machine.earliestBeginDate,
                    countOfBytesClientExpectsToSend: machine.clientExpectsToSend,
                    countOfBytesClientExpectsToReceive: machine.clientExpectsToReceive,
                    expectedChecksum: machine.expectedChecksum,
                    maximumBytesPerSecond: machine.maximumBytesPerSecond,
                    maximumSegments: machine.maximumSegments
                ),
                machine.resumeSource
            )
        }
        var encoded = details
        encoded.resumeData = resumeSource?.encoded()
        if let url = storage.withLock({ $0.originalRequest?.url }), url.user != nil {
            encoded.credentialURL = url.absoluteString
        }
        return encoded
    }

    /// The request's headers, then the session's additional ones, the resume headers and `If-Range`, cookies from
    /// the jar, and a User-Agent; a header with a forbidden character is dropped (and logged).
    private func headerLines(for request: TaskRequest, url: URL, plan: HopPlan) -> [String] {
        var present = Set<String>()
        var lines: [String] = []
        func add(_ name: String, _ value: String) {
            guard !name.isEmpty, !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" }),
                !value.contains(where: { $0 == "\r" || $0 == "\n" })
            else {
                core.logger?.warning("dropped a header with a forbidden character", metadata: ["name": "\(name)"])
                return
            }
            present.insert(name.lowercased())
            lines.append("\(name): \(value)")
        }
        for (name, value) in request.headerFields {
            add(name, value)
        }
        let additional = core.configuration.httpAdditionalHeaders ?? [:]
        for (name, value) in additional where !present.contains(name.lowercased()) {
            add(name, value)
        }
        let resumes = plan.resumeOffset > 0 || plan.resume?.segments != nil
        if let resume = plan.resume, resumes {
            for (name, value) in resume.headers where !present.contains(name.lowercased()) {
                add(name, value)
            }
            if !present.contains("if-range") {
                add("If-Range", resume.validator)
            }
        }
        for (name, value) in plan.conditions where !present.contains(name.lowercased()) {
            add(name, value)
        }
        // A resumed range asks for the identity coding: the bytes on disk were never encoded.
        if resumes && !present.contains("accept-encoding") {
            add("Accept-Encoding", "identity")
        }
        // An upload offers resumption (its exchanges after a cut carry their own fields).
        if kind == .upload, plan.hop == 1, request.method.uppercased() != "GET" {
            for (name, value) in UploadResumption.offerFields.sorted(by: { $0.key < $1.key })
            where !present.contains(name.lowercased()) {
                add(name, value)
            }
        }
        if !present.contains("cookie"), let cookie = core.cookieHeader(for: url) {
            add("Cookie", cookie)
        }
        if !present.contains("user-agent") {
            add("User-Agent", "Courier/1")
        }
        if core.telemetry.tracer != nil, let span = storage.withLock({ $0.span }) {
            core.telemetry.inject(span, into: &lines)
        }
        return lines
    }

    /// The URL string for the engine: credentials in the URL are never handed to curl (Courier answers
    /// challenges itself), and a missing path becomes "/".
    static func engineURL(_ url: URL) -> String {
        guard url.user != nil || url.password != nil,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else {
            return url.absoluteString
        }
        components.user = nil
        components.password = nil
        return components.url?.absoluteString ?? url.absoluteString
    }
}
