import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

extension SessionTask {
    /// Checks a request before anything is submitted.
    static func validate(_ request: URLRequest?) -> CourierError? {
        guard let url = request?.url else {
            return CourierError(.badURL, "the request has no URL")
        }
        guard let scheme = url.scheme?.lowercased() else {
            return CourierError(.badURL, "the URL is not absolute", failingURL: url)
        }
        guard scheme == "http" || scheme == "https" else {
            return CourierError(.unsupportedURL, "unsupported URL scheme \"\(scheme)\"", failingURL: url)
        }
        guard let host = url.host, !host.isEmpty else {
            return CourierError(.badURL, "the URL has no host", failingURL: url)
        }
        return nil
    }

    /// The first `resume()`: register, prepare files, submit the first hop.
    func start() {
        guard core.register(self, key: registryKey) else {
            failBeforeSubmit(CourierError(.sessionInvalidated, "the session was invalidated", failingURL: currentURL))
            return
        }
        let now = Date()
        let deadline = now.addingTimeInterval(core.configuration.timeoutIntervalForResource)
        let (request, resumeSource, resumeError) = storage.withLock { state in
            state.startDate = now
            state.resourceDeadline = deadline
            return (state.currentRequest, state.resumeSource, state.resumeSourceError)
        }
        if let resumeError {
            failBeforeSubmit(resumeError)
            return
        }
        if let error = SessionTask.validate(request) {
            failBeforeSubmit(error)
            return
        }
        guard let request else {
            return
        }
        if case .file(let url) = uploadBody {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else {
                failBeforeSubmit(
                    CourierError(.fileDoesNotExist, "the upload file does not exist: \(url.path)", failingURL: url)
                )
                return
            }
        }
        var resumeOffset: Int64 = 0
        if kind == .download {
            let prepared: Result<URL, CourierError>
            if let resumeSource {
                prepared = claimPartialFile(resumeSource)
                resumeOffset = resumeSource.bytesOnDisk
            } else {
                prepared = core.makeStagingFile()
            }
            switch prepared {
            case .success(let url):
                storage.withLock { $0.stagingURL = url }
            case .failure(let error):
                failBeforeSubmit(error)
                return
            }
        }
        submitHop(request, resumeOffset: resumeOffset, authentication: .none)
    }

    /// Fails a task that never got a transfer (or whose hop could not be submitted).
    func failBeforeSubmit(_ error: CourierError) {
        var work = DelegateWork()
        complete(.failure(error), work: &work)
        core.dispatcher.enqueue(work)
    }

    /// Submits one hop for `request` as this task's current hop.
    func submitHop(_ request: URLRequest, resumeOffset: Int64, authentication: TransferSpec.Authentication) {
        guard let url = request.url else {
            failBeforeSubmit(CourierError(.badURL, "the request has no URL"))
            return
        }
        let engine: Engine
        switch core.engine() {
        case .success(let running):
            engine = running
        case .failure(let error):
            failBeforeSubmit(error)
            return
        }
        let configuration = core.configuration
        let now = Date()
        let prepared = storage.withLock { state -> (Float, Date?, URL?, ResumeData?)? in
            guard state.phase == .running, !state.cancelRequested else {
                return nil
            }
            return (state.priority, state.resourceDeadline, state.stagingURL, state.resumeSource)
        }
        guard let (priority, deadline, stagingURL, resumeSource) = prepared else {
            // Cancelled between hops: report it now.
            failBeforeSubmit(CourierError(.cancelled, "cancelled", failingURL: url))
            return
        }

        var spec = TransferSpec(url: SessionTask.engineURL(url))
        spec.method = (request.httpMethod ?? "GET").uppercased()
        // HTTP/2 is offered through ALPN only; on plain http the flag would only make curl wait (PIPEWAIT) for a
        // connection that can never multiplex.
        spec.http2 = configuration.allowsHTTP2 && url.scheme?.lowercased() == "https"
        spec.authentication = authentication
        spec.priority = Int32(priority * 1000)

        // Timeouts: idle from the configuration or a smaller request timeout; the resource deadline as a total.
        var idle = configuration.timeoutIntervalForRequest
        if request.timeoutInterval > 0 && request.timeoutInterval < idle {
            idle = request.timeoutInterval
        }
        spec.idleTimeoutMilliseconds = idle > 0 ? Int64((idle * 1000).rounded(.up)) : 0
        if let deadline {
            let remaining = deadline.timeIntervalSince(now)
            guard remaining > 0 else {
                failBeforeSubmit(CourierError(.timedOut, "the resource timeout expired", failingURL: url))
                return
            }
            spec.totalTimeoutMilliseconds = max(1, Int64((remaining * 1000).rounded(.up)))
        }

        // Headers: the request's, the session's additional ones, cookies from the jar, If-Range when resuming.
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
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            add(name, value)
        }
        for (name, value) in configuration.httpAdditionalHeaders ?? [:] where !present.contains(name.lowercased()) {
            add(name, value)
        }
        if let resumeSource, resumeOffset > 0 {
            for (name, value) in resumeSource.headers where !present.contains(name.lowercased()) {
                add(name, value)
            }
            if !present.contains("if-range") {
                add("If-Range", resumeSource.validator)
            }
        }
        // A range continues the bytes already on disk, which were never encoded (resume data is made only for
        // an entity without a content coding): ask for the identity coding and decode nothing.
        spec.decodesContent = resumeOffset == 0
        if resumeOffset > 0 && !present.contains("accept-encoding") {
            add("Accept-Encoding", "identity")
        }
        if !present.contains("cookie"), let cookie = core.cookieHeader(for: url) {
            add("Cookie", cookie)
        }
        if !present.contains("user-agent") {
            add("User-Agent", "Courier/1")
        }
        spec.headers = lines

        // Body.
        var bodyDescriptor: Int32 = -1
        let method = spec.method
        let sendsBody = method != "GET" && method != "HEAD"
        if let uploadBody, sendsBody {
            switch uploadBody {
            case .data(let data):
                spec.body = data
            case .file(let fileURL):
                let descriptor = open(fileURL.path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else {
                    let code: CourierError.Code = errno == ENOENT ? .fileDoesNotExist : .cannotOpenFile
                    failBeforeSubmit(
                        CourierError(code, "cannot open the upload file", osError: errno, failingURL: fileURL)
                    )
                    return
                }
                var info = stat()
                fstat(descriptor, &info)
                bodyDescriptor = descriptor
                spec.bodyDescriptor = descriptor
                spec.bodyDescriptorLength = Int64(info.st_size)
            }
        } else if let body = request.httpBody, !body.isEmpty, sendsBody {
            spec.body = body
        }
        if method == "HEAD" {
            spec.noBody = true
        }

        // Sink.
        var sinkDescriptor: Int32 = -1
        if kind == .download {
            guard let stagingURL else {
                closeIfValid(bodyDescriptor)
                failBeforeSubmit(CourierError(.cannotCreateFile, "no staging file", failingURL: url))
                return
            }
            var flags = O_WRONLY | O_CREAT | O_CLOEXEC
            if resumeOffset == 0 {
                flags |= O_TRUNC
            }
            let descriptor = open(stagingURL.path, flags, 0o600)
            guard descriptor >= 0 else {
                closeIfValid(bodyDescriptor)
                failBeforeSubmit(
                    CourierError(.cannotCreateFile, "cannot open the staging file", osError: errno, failingURL: url)
                )
                return
            }
            sinkDescriptor = descriptor
            spec.sink = .file(descriptor: descriptor)
            spec.resumeOffset = resumeOffset
            // A resumed download holds its response so that a 416 "already complete" is not written to the file.
            spec.askResponse = resumeOffset > 0
        } else {
            spec.sink = .memory
            spec.askResponse = sink.usesDelegateForBody && core.isDataDelegate
        }

        let hop = storage.withLock { state -> Int? in
            guard state.phase == .running, !state.cancelRequested else {
                return nil
            }
            state.authentication = authentication
            state.requestedResumeOffset = resumeOffset
            state.bodyOffset = resumeOffset
            state.received = 0
            state.reportedReceived = 0
            state.sent = 0
            state.reportedSent = 0
            state.head = nil
            return state.beginHop(request, at: now)
        }
        guard let hop else {
            closeIfValid(bodyDescriptor)
            closeIfValid(sinkDescriptor)
            failBeforeSubmit(CourierError(.cancelled, "cancelled", failingURL: url))
            return
        }
        spec.tag = SessionCore.tag(key: registryKey, hop: hop)
        switch engine.submit(spec) {
        case .success(let transfer):
            let action = storage.withLock { $0.adopt(transfer: transfer, hop: hop) }
            switch action {
            case .none: break
            case .cancel(let transfer): engine.cancel(transfer)
            case .pause(let transfer): engine.pause(transfer)
            }
            core.logger?.trace(
                "submitted",
                metadata: ["task": "\(taskIdentifier)", "hop": "\(hop)", "transfer": "\(transfer)"]
            )
        case .failure(let failure):
            closeIfValid(bodyDescriptor)
            closeIfValid(sinkDescriptor)
            storage.withLock { state in
                if state.hop == hop {
                    state.transfer = 0
                }
            }
            var error = CourierError(engineError: failure.error, curlCode: 0, osError: 0, message: nil, url: url)
            error.message = "the request was refused before submission"
            failBeforeSubmit(error)
        }
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

    private func closeIfValid(_ descriptor: Int32) {
        if descriptor >= 0 {
            close(descriptor)
        }
    }
}
