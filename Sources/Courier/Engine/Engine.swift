internal import CSupport
import CourierConcurrency
import Foundation

/// Settings the engine is created with (from a ``SessionConfiguration``).
struct EngineConfiguration: Sendable {
    var loopCount: Int
    var maximumHostConnections: Int
    var maximumActiveTransfers: Int
    var trustedCertificatesPEM: Data?
    /// `cr_engine_config_t.write_delay_us`: a slow disk, for tests.
    var diskWriteDelay: Duration = .zero
    /// Receive limits every transfer draws from (the session's own, courierd's); at most `CR_MAX_RATE_LIMITS`.
    var rateLimiters: [BandwidthLimiter] = []
}

/// The Swift owner of one `cr_engine_t`: the in-process ``TransferBackend``.
///
/// `@unchecked Sendable` because every `cr_*` function used here is documented thread-safe in
/// `courier_engine.h` (commands are queued to the owning loop), the engine pointer is immutable after `init`,
/// and destruction happens exactly once in `deinit`, when no other reference can exist.
final class Engine: @unchecked Sendable {
    typealias Handler = TransferEventHandler

    fileprivate let pointer: OpaquePointer
    /// Kept so that their windows go on switching while the engine runs (the C engine holds its own references).
    private let rateLimiters: [BandwidthLimiter]
    /// The callback context: retained while C may call the callback, released after `cr_engine_destroy`.
    private let router: Unmanaged<EngineEventRouter>

    init(configuration: EngineConfiguration, handler: @escaping Handler) throws(CourierError) {
        let router = Unmanaged.passRetained(EngineEventRouter(handler: handler))
        var config = cr_engine_config_t()
        config.loop_count = Int32(max(1, configuration.loopCount))
        config.max_host_connections = Int32(max(0, configuration.maximumHostConnections))
        config.max_active_transfers = Int32(max(0, configuration.maximumActiveTransfers))
        config.buffer_size = 0
        config.write_delay_us = Int32(clamping: Int64((configuration.diskWriteDelay.inSeconds * 1e6).rounded()))
        config.on_events = courierEngineEvents
        config.context = router.toOpaque()
        var errorText: UnsafePointer<CChar>?
        let limits: [OpaquePointer?] = configuration.rateLimiters.prefix(Int(CR_MAX_RATE_LIMITS)).map(\.pointer)
        let created: OpaquePointer? = limits.withUnsafeBufferPointer { limitPointers in
            config.rate_limits = limitPointers.baseAddress
            config.rate_limit_count = limitPointers.count
            if let pem = configuration.trustedCertificatesPEM, !pem.isEmpty {
                return pem.withUnsafeBytes { bytes in
                    config.ca_pem = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
                    config.ca_pem_length = bytes.count
                    return cr_engine_create(&config, &errorText)
                }
            }
            return cr_engine_create(&config, &errorText)
        }
        guard let created else {
            router.release()
            let text = errorText.map { String(cString: $0) } ?? "the transfer engine could not start"
            throw CourierError(.unknown, text)
        }
        self.pointer = created
        self.router = router
        self.rateLimiters = configuration.rateLimiters
        EngineCensus.engineCreated()
    }

    deinit {
        let teardown = Teardown(pointer: pointer, router: router)
        if EngineEventRouter.isOnLoopThread {
            // The last reference dropped inside the event callback: the engine must not be destroyed there.
            DispatchQueue.global(qos: .utility).async {
                teardown.run()
            }
        } else {
            teardown.run()
        }
    }

    /// What `deinit` must release, movable to another thread.
    ///
    /// `@unchecked Sendable`: it is created once in `deinit`, when nothing else can reach the engine, and run
    /// exactly once on one thread.
    private struct Teardown: @unchecked Sendable {
        let pointer: OpaquePointer
        let router: Unmanaged<EngineEventRouter>

        func run() {
            cr_engine_destroy(pointer)
            router.release()
            EngineCensus.engineDestroyed()
        }
    }

    // MARK: Transfer identity

    /// Bits of the engine tag that hold the hop number; the task identifier is above them.
    static let hopBits: UInt64 = 20
    private static let hopMask: UInt64 = (1 << hopBits) - 1

    static func tag(_ id: TransferID) -> UInt64 {
        (UInt64(id.task) << hopBits) | (UInt64(id.hop) & hopMask)
    }

    static func transferID(tag: UInt64) -> TransferID {
        TransferID(task: Int(tag >> hopBits), hop: Int(tag & hopMask))
    }
}

extension Engine: TransferBackend {
    /// Opens the files `spec` names, then hands the exchange to the engine, which owns the descriptors from then on.
    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError> {
        var bodyDescriptor: Int32 = -1
        var bodyLength: Int64 = 0
        if case .file(let path) = spec.body {
            bodyDescriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard bodyDescriptor >= 0 else {
                let code: CourierError.Code = errno == ENOENT ? .fileDoesNotExist : .cannotOpenFile
                return .failure(
                    CourierError(
                        code,
                        "cannot open the upload file",
                        osError: errno,
                        failingURL: URL(fileURLWithPath: path)
                    )
                )
            }
            var info = stat()
            fstat(bodyDescriptor, &info)
            bodyLength = max(0, Int64(info.st_size) - spec.bodyOffset)
        }
        var sinkDescriptor: Int32 = -1
        if case .file(let path, let append) = spec.sink {
            // The mode any new file gets (0666 less the umask), so that the file an app moves out of the staging
            // directory reads as one it made; the staging directory (0700) keeps it private meanwhile.
            sinkDescriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (append ? 0 : O_TRUNC), 0o666)
            guard sinkDescriptor >= 0 else {
                let error = CourierError(
                    .cannotCreateFile,
                    "cannot open the staging file",
                    osError: errno,
                    failingURL: URL(string: spec.url)
                )
                Engine.closeIfValid(bodyDescriptor)
                return .failure(error)
            }
        }
        let (transfer, refusal) = submitRequest(
            spec,
            tag: Engine.tag(id),
            bodyDescriptor: bodyDescriptor,
            bodyLength: bodyLength,
            sinkDescriptor: sinkDescriptor
        )
        guard transfer != 0 else {
            Engine.closeIfValid(bodyDescriptor)
            Engine.closeIfValid(sinkDescriptor)
            var error = CourierError(
                engineError: refusal,
                curlCode: 0,
                osError: 0,
                message: nil,
                url: URL(string: spec.url)
            )
            error.message = "the request was refused before submission"
            return .failure(error)
        }
        return .success(transfer)
    }

    func cancel(_ transfer: UInt64, producingResumeData: Bool) {
        cr_transfer_cancel(pointer, transfer)
    }

    func pause(_ transfer: UInt64) {
        cr_transfer_pause(pointer, transfer)
    }

    func resume(_ transfer: UInt64) {
        cr_transfer_resume(pointer, transfer)
    }

    func supply(_ transfer: UInt64, _ bytes: Data, end: Bool) -> Bool {
        bytes.withUnsafeBytes { buffer in
            cr_transfer_supply(pointer, transfer, buffer.baseAddress, buffer.count, end ? 1 : 0) == 0
        }
    }

    @discardableResult
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError? {
        switch decision {
        case .allow:
            cr_transfer_decide(pointer, transfer, CR_DECIDE_ALLOW, -1)
        case .cancel:
            cr_transfer_decide(pointer, transfer, CR_DECIDE_CANCEL, -1)
        case .toFile(let path):
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)  // As the sink above.
            guard descriptor >= 0 else {
                let error = CourierError(
                    .cannotCreateFile,
                    "cannot create the staging file",
                    osError: errno,
                    failingURL: URL(fileURLWithPath: path)
                )
                cr_transfer_decide(pointer, transfer, CR_DECIDE_CANCEL, -1)
                return error
            }
            cr_transfer_decide(pointer, transfer, CR_DECIDE_TO_FILE, descriptor)
        case .beginDelayed:
            // The engine begins every transfer at once and never asks (no `delayedStart`): nothing to begin.
            break
        }
        return nil
    }

    private static func closeIfValid(_ descriptor: Int32) {
        if descriptor >= 0 {
            close(descriptor)
        }
    }
}

extension Engine {
    /// Turns `spec` into a `cr_request_t` and submits it. Returns the transfer id, or 0 and the engine's refusal.
    private func submitRequest(
        _ spec: TransferSpec,
        tag: UInt64,
        bodyDescriptor: Int32,
        bodyLength: Int64,
        sinkDescriptor: Int32
    ) -> (UInt64, cr_error_t) {
        var cStrings: [UnsafeMutablePointer<CChar>?] = []
        defer {
            for string in cStrings {
                free(string)
            }
        }
        func keep(_ string: String) -> UnsafePointer<CChar>? {
            let copy = strdup(string)
            cStrings.append(copy)
            return UnsafePointer(copy)
        }
        var request = cr_request_t()
        request.url = keep(spec.url)
        request.method = keep(spec.method)
        request.body_fd = bodyDescriptor
        request.body_fd_length = bodyLength
        request.body_fd_offset = spec.bodyOffset
        if case .streamed(let length) = spec.body {
            request.streamed_body_length = length ?? -1
        }
        switch spec.sink {
        case .memory:
            request.sink = CR_SINK_MEMORY
            request.sink_fd = -1
        case .file:
            request.sink = CR_SINK_FILE
            request.sink_fd = sinkDescriptor
        case .discard:
            request.sink = CR_SINK_DISCARD
            request.sink_fd = -1
        }
        request.resume_offset = spec.resumeOffset
        request.range_length = spec.rangeLength
        request.digest = Self.digest(of: spec)
        request.max_receive_speed = spec.maximumBytesPerSecond
        request.max_send_speed = spec.maximumBytesPerSecond
        request.max_body = spec.maximumBodyLength
        request.flags = Engine.flags(of: spec)
        (request.auth, request.username, request.password) = Self.credential(spec.authentication, keep)
        request.proxy = spec.proxy.flatMap(keep)
        request.no_proxy = spec.noProxy.flatMap(keep)
        (request.proxy_auth, request.proxy_username, request.proxy_password) =
            Self.credential(spec.proxyAuthentication, keep)
        request.idle_timeout_ms = spec.idleTimeoutMilliseconds
        request.total_timeout_ms = spec.totalTimeoutMilliseconds
        request.priority = spec.priority
        request.tag = tag
        if let options = spec.connection {
            let (connection, owned) = Self.connection(options)
            request.connection = connection
            cStrings += owned.map { $0.assumingMemoryBound(to: CChar.self) }
        }
        let headerPointers: [UnsafePointer<CChar>?] = spec.headers.map { keep($0) }
        var engineError = CR_OK
        let transfer: UInt64 = headerPointers.withUnsafeBufferPointer { headers in
            request.headers = headers.baseAddress
            request.header_count = headers.count
            guard case .data(let body) = spec.body, !body.isEmpty else {
                return cr_engine_submit(pointer, &request, &engineError)
            }
            guard let borrowed = EngineBorrowedBody.retained(body) else {
                // Small: the engine copies it during the submit.
                return body.withUnsafeBytes { bytes in
                    request.body = bytes.baseAddress
                    request.body_length = bytes.count
                    return cr_engine_submit(pointer, &request, &engineError)
                }
            }
            request.borrowed_body = borrowed
            let transfer = cr_engine_submit(pointer, &request, &engineError)
            if transfer == 0 {
                EngineBorrowedBody.releaseUnsubmitted(borrowed)
            }
            return transfer
        }
        return (transfer, engineError == CR_OK && transfer == 0 ? CR_ERR_INTERNAL : engineError)
    }

    /// The engine's scheme, user and password for `authentication` (the strings copied by `keep`).
    private static func credential(
        _ authentication: TransferSpec.Authentication,
        _ keep: (String) -> UnsafePointer<CChar>?
    ) -> (cr_auth_t, UnsafePointer<CChar>?, UnsafePointer<CChar>?) {
        switch authentication {
        case .none: (CR_AUTH_NONE, nil, nil)
        case .basic(let user, let password): (CR_AUTH_BASIC, keep(user), keep(password))
        case .digest(let user, let password): (CR_AUTH_DIGEST, keep(user), keep(password))
        case .ntlm(let user, let password): (CR_AUTH_NTLM, keep(user), keep(password))
        case .negotiate: (CR_AUTH_NEGOTIATE, keep(""), keep(""))
        }
    }

    /// The engine's connection options for `options`, and the memory that holds them (the struct, its strings and
    /// bytes, copied with `malloc`), which the caller frees after the submit. A function of its own: its copies do
    /// not make `submitRequest`'s list of strings a captured, heap-allocated variable on every submit.
    private static func connection(
        _ options: ConnectionOptions
    ) -> (UnsafePointer<cr_connection_t>, [UnsafeMutableRawPointer]) {
        var owned: [UnsafeMutableRawPointer] = []
        func keep(_ string: String) -> UnsafePointer<CChar>? {
            let copy = strdup(string)!
            owned.append(UnsafeMutableRawPointer(copy))
            return UnsafePointer(copy)
        }
        func keep(_ data: Data) -> (UnsafeRawPointer?, Int) {
            let buffer = malloc(max(data.count, 1))!
            data.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: data.count)
            owned.append(buffer)
            return (UnsafeRawPointer(buffer), data.count)
        }
        let memory = malloc(MemoryLayout<cr_connection_t>.stride)!
        owned.append(memory)
        let connection = memory.initializeMemory(as: cr_connection_t.self, repeating: cr_connection_t(), count: 1)
        switch options.trust {
        case .verify: connection.pointee.trust = CR_TRUST_VERIFY
        case .ask: connection.pointee.trust = CR_TRUST_ASK
        case .accepted: connection.pointee.trust = CR_TRUST_ACCEPTED
        case .probe: connection.pointee.trust = CR_TRUST_PROBE
        }
        connection.pointee.pinned_public_keys = options.curlPinnedPublicKeys.flatMap(keep)
        connection.pointee.tls_minimum = cr_tls_version_t(UInt32(options.tlsMinimum ?? 0))
        connection.pointee.tls_maximum = cr_tls_version_t(UInt32(options.tlsMaximum ?? 0))
        func describe(_ client: ConnectionOptions.ClientCertificate?, into engine: inout cr_client_certificate_t) {
            guard let client else {
                return
            }
            (engine.certificate, engine.certificate_length) = keep(client.certificate)
            engine.type = keep(client.format.rawValue)
            if let key = client.key {
                (engine.key, engine.key_length) = keep(key)
            }
            engine.key_password = client.password.flatMap(keep)
        }
        describe(options.clientCertificate, into: &connection.pointee.client_certificate)
        describe(options.proxyClientCertificate, into: &connection.pointee.proxy_client_certificate)
        connection.pointee.unix_socket_path = options.unixSocketPath.flatMap(keep)
        if !options.resolve.isEmpty {
            let entries = malloc(MemoryLayout<UnsafePointer<CChar>?>.stride * options.resolve.count)!
            owned.append(entries)
            let resolve = entries.initializeMemory(
                as: UnsafePointer<CChar>?.self,
                repeating: nil,
                count: options.resolve.count
            )
            for (index, entry) in options.resolve.enumerated() {
                resolve[index] = keep(entry)
            }
            connection.pointee.resolve = UnsafePointer(resolve)
            connection.pointee.resolve_count = options.resolve.count
        }
        connection.pointee.ip_version = Int32(options.ipVersion ?? 0)
        connection.pointee.interface_name = options.interface.flatMap(keep)
        connection.pointee.doh_url = options.dnsOverHTTPSURL.flatMap(keep)
        return (UnsafePointer(connection), owned)
    }

    private static func digest(of spec: TransferSpec) -> cr_digest_t {
        switch spec.digest {
        case .sha256: CR_DIGEST_SHA256
        case .sha512: CR_DIGEST_SHA512
        case .crc32c: CR_DIGEST_CRC32C
        case nil: spec.announcedDigest ? CR_DIGEST_AUTO : CR_DIGEST_NONE
        }
    }

    private static func flags(of spec: TransferSpec) -> UInt32 {
        var flags: UInt32 = 0
        if spec.askResponse { flags |= UInt32(CR_FLAG_ASK_RESPONSE) }
        if spec.holdRedirectAndAuth { flags |= UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH) }
        if spec.noBody { flags |= UInt32(CR_FLAG_NO_BODY) }
        if spec.decodesContent { flags |= UInt32(CR_FLAG_DECODE) }
        if spec.http2 { flags |= UInt32(CR_FLAG_HTTP2) }
        if case .streamed = spec.body { flags |= UInt32(CR_FLAG_STREAMED_BODY) }
        if spec.upgrade { flags |= UInt32(CR_FLAG_UPGRADE) }
        return flags
    }
}
