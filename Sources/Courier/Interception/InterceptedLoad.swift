import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One exchange a ``SessionURLProtocol`` loads: the client it reports to, turning its reports into the transfer
/// events an engine transfer would send (a held 3xx, 401 or 407, or a response the task asks about, waits for
/// ``decide(_:)``; a download's body is written to its staging file). Everything runs on the load's serial queue, in
/// the order reported, so the events of the exchange are in order whatever thread the protocol reports from.
///
/// `@unchecked Sendable`: `state` and `loader` are touched only on `queue`.
final class InterceptedLoad: SessionURLProtocolClient, @unchecked Sendable {
    private enum Hold {
        /// Nothing waits.
        case none
        /// A held response waits for its decision; what came after it waits with it.
        case waiting(data: [Data], end: TransferCompletion?)
    }

    private struct State {
        var progress = TransferProgress()
        var hold = Hold.none
        var responded = false
        /// The protocol reported its end (later reports are ignored).
        var loadEnded = false
        /// COMPLETE went out: nothing more does.
        var completed = false
        var file: FileHandle?
        var bytesOnDisk: Int64 = 0
    }

    let handle: UInt64
    let id: TransferID
    private let spec: TransferSpec
    private let emit: TransferEventHandler
    private let ended: @Sendable (UInt64) -> Void
    private let queue = DispatchQueue(label: "Courier.InterceptedLoad")
    private var state = State()
    private var loader: SessionURLProtocol?

    init(
        handle: UInt64,
        id: TransferID,
        spec: TransferSpec,
        emit: @escaping TransferEventHandler,
        ended: @escaping @Sendable (UInt64) -> Void
    ) {
        self.handle = handle
        self.id = id
        self.spec = spec
        self.emit = emit
        self.ended = ended
    }

    /// The request a protocol sees for `spec`: its URL, method, header lines (not the engine's removals, `Name:`)
    /// and body.
    static func request(for spec: TransferSpec) -> URLRequest {
        var request = URLRequest(url: URL(string: spec.url) ?? URL(fileURLWithPath: "/"))
        request.httpMethod = spec.method
        for line in spec.headers {
            if let (name, value) = TransferSpec.field(of: line), !value.isEmpty {
                request.addValue(value, forHTTPHeaderField: name.trimmingCharacters(in: .whitespaces))
            }
        }
        // The credential the task chose goes as the engine would send it (Basic; Digest and NTLM are handshakes of
        // the engine's that a protocol cannot take part in, so a protocol sees no credential for them).
        if case .basic(let user, let password) = spec.authentication {
            let token = Data("\(user):\(password)".utf8).base64EncodedString()
            request.setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
        }
        switch spec.body {
        case .data(let body):
            request.httpBody = body
        case .file(let path):
            request.httpBodyStream = InputStream(fileAtPath: path)
        case .none, .streamed:
            break
        }
        return request
    }

    func start(_ loader: SessionURLProtocol) {
        queue.async { [self] in
            self.loader = loader
            if case .file(let path, let append) = spec.sink {
                let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0o666)
                guard descriptor >= 0 else {
                    complete(CourierError(.cannotCreateFile, "cannot open the staging file", osError: errno))
                    return
                }
                state.file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            }
            loader.startLoading()
        }
    }

    // MARK: The client

    func urlProtocol(
        _ protocol: SessionURLProtocol,
        didReceive response: URLResponse,
        cacheStoragePolicy policy: URLCache.StoragePolicy
    ) {
        let head = Self.head(of: response)
        queue.async { [self] in
            guard !state.loadEnded, !state.responded else {
                return
            }
            respond(head)
        }
    }

    func urlProtocol(_ protocol: SessionURLProtocol, didLoad data: Data) {
        queue.async { [self] in
            guard !state.loadEnded, state.responded, !data.isEmpty else {
                return
            }
            if case .waiting(var kept, let end) = state.hold {
                kept.append(data)
                state.hold = .waiting(data: kept, end: end)
                return
            }
            deliver(data)
        }
    }

    func urlProtocolDidFinishLoading(_ protocol: SessionURLProtocol) {
        queue.async { [self] in
            guard !state.loadEnded else {
                return
            }
            state.loadEnded = true
            if !state.responded {
                // No response: as a server that closed without one.
                complete(CourierError(.badServerResponse, "the protocol class finished without a response"))
                return
            }
            end(TransferCompletion(error: nil))
        }
    }

    func urlProtocol(_ protocol: SessionURLProtocol, didFailWithError error: any Error) {
        let failure = Self.courierError(error, url: URL(string: spec.url))
        queue.async { [self] in
            guard !state.loadEnded else {
                return
            }
            state.loadEnded = true
            complete(failure)
        }
    }

    func urlProtocol(
        _ protocol: SessionURLProtocol,
        wasRedirectedTo request: URLRequest,
        redirectResponse: URLResponse
    ) {
        var head = Self.head(of: redirectResponse)
        if let target = request.url?.absoluteString {
            head.fieldLines.removeAll { $0.name.caseInsensitiveEquals("Location") }
            head.fieldLines.append(ResponseHead.Field(name: "Location", value: target))
        }
        if !(300 ... 399).contains(head.status) {
            head.status = 302
        }
        let redirect = head
        queue.async { [self] in
            guard !state.loadEnded, !state.responded else {
                return
            }
            state.loadEnded = true
            respond(redirect)
            end(TransferCompletion(error: nil))
        }
    }

    // MARK: Commands

    func cancel() {
        queue.async { [self] in
            guard !state.completed else {
                return
            }
            if !state.loadEnded {
                state.loadEnded = true
                loader?.stopLoading()
            }
            complete(CourierError(.cancelled, "cancelled"))
        }
    }

    func decide(_ decision: TransferDecision) -> CourierError? {
        queue.async { [self] in
            guard case .waiting(let kept, let end) = state.hold, !state.completed else {
                return
            }
            state.hold = .none
            switch decision {
            case .cancel:
                if !state.loadEnded {
                    state.loadEnded = true
                    loader?.stopLoading()
                }
                complete(CourierError(.cancelled, "cancelled"))
                return
            case .toFile(let path):
                let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
                guard descriptor >= 0 else {
                    complete(CourierError(.cannotCreateFile, "cannot open the download file", osError: errno))
                    return
                }
                state.file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            case .allow, .beginDelayed:
                break
            }
            kept.forEach(deliver)
            if let end {
                self.end(end)
            }
        }
        return nil
    }

    // MARK: Events (on `queue`)

    private func respond(_ head: ResponseHead) {
        state.responded = true
        state.progress.sent = state.progress.expectedToSend
        state.progress.expectedToReceive = head.value("Content-Length").flatMap { Int64($0) } ?? -1
        let redirects = (300 ... 399).contains(head.status) && head.value("Location") != nil
        let challenge = head.status == 401 || head.status == 407
        let held = spec.askResponse || spec.holdRedirectAndAuth && (redirects || challenge)
        if held {
            state.hold = .waiting(data: [], end: nil)
        }
        send(.response(held: held, resumeOffset: 0, head: head))
    }

    private func deliver(_ data: Data) {
        state.progress.received += Int64(data.count)
        if let file = state.file {
            do {
                try file.write(contentsOf: data)
                state.bytesOnDisk += Int64(data.count)
                state.progress.bytesOnDisk = state.bytesOnDisk
                send(.progress)
            } catch {
                state.loadEnded = true
                loader?.stopLoading()
                complete(CourierError(.cannotWriteToFile, "cannot write the download: \(error)"))
            }
            return
        }
        send(.data(data))
    }

    /// The load ended as `completion` says: now, or once a held response is decided.
    private func end(_ completion: TransferCompletion) {
        if case .waiting(let kept, nil) = state.hold {
            state.hold = .waiting(data: kept, end: completion)
            return
        }
        var completion = completion
        completion.bytesOnDisk = state.bytesOnDisk
        finish(completion)
    }

    private func complete(_ error: CourierError) {
        var completion = TransferCompletion(error: error)
        completion.bytesOnDisk = state.bytesOnDisk
        finish(completion)
    }

    private func finish(_ completion: TransferCompletion) {
        guard !state.completed else {
            return
        }
        state.completed = true
        state.hold = .none
        try? state.file?.close()
        state.file = nil
        loader = nil
        send(.complete(completion))
        ended(handle)
    }

    private func send(_ payload: TransferEvent.Payload) {
        emit([TransferEvent(id: id, transfer: handle, progress: state.progress, payload: payload)])
    }

    // MARK: Conversions

    private static func head(of response: URLResponse) -> ResponseHead {
        guard let http = response as? HTTPURLResponse else {
            var fields: [String: String] = [:]
            if response.expectedContentLength >= 0 {
                fields["Content-Length"] = String(response.expectedContentLength)
            }
            if let type = response.mimeType {
                fields["Content-Type"] = type
            }
            return ResponseHead(status: 200, fields: fields)
        }
        let lines = http.allHeaderFields.compactMap { name, value -> ResponseHead.Field? in
            guard let name = name as? String else {
                return nil
            }
            return ResponseHead.Field(name: name, value: "\(value)")
        }
        return ResponseHead(status: http.statusCode, fieldLines: lines.sorted { $0.name < $1.name })
    }

    private static func courierError(_ error: any Error, url: URL?) -> CourierError {
        if let error = error as? CourierError {
            return error
        }
        if let error = error as? URLError {
            return CourierError(
                CourierError.Code(rawValue: error.errorCode),
                "the protocol class failed: \(error.localizedDescription)",
                failingURL: url
            )
        }
        return CourierError(.unknown, "the protocol class failed: \(error)", failingURL: url)
    }
}
