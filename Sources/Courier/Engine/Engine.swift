internal import CSupport
import CourierConcurrency
import Foundation

/// Settings the engine is created with (from a ``SessionConfiguration``).
struct EngineConfiguration: Sendable {
    var loopCount: Int
    var maximumHostConnections: Int
    var maximumActiveTransfers: Int
    var trustedCertificatesPEM: Data?
}

/// Why a submit was refused by the engine before any network activity.
struct EngineSubmitError: Error, Sendable {
    var error: cr_error_t
}

/// The Swift owner of one `cr_engine_t`.
///
/// `@unchecked Sendable` because every `cr_*` function used here is documented thread-safe in
/// `courier_engine.h` (commands are queued to the owning loop), the engine pointer is immutable after `init`,
/// and destruction happens exactly once in `deinit`, when no other reference can exist.
final class Engine: @unchecked Sendable {
    typealias Handler = @Sendable ([EngineEvent]) -> Void

    private let pointer: OpaquePointer
    /// The callback context: retained while C may call the callback, released after `cr_engine_destroy`.
    private let router: Unmanaged<EngineEventRouter>

    init(configuration: EngineConfiguration, handler: @escaping Handler) throws(CourierError) {
        let router = Unmanaged.passRetained(EngineEventRouter(handler: handler))
        var config = cr_engine_config_t()
        config.loop_count = Int32(max(1, configuration.loopCount))
        config.max_host_connections = Int32(max(0, configuration.maximumHostConnections))
        config.max_active_transfers = Int32(max(0, configuration.maximumActiveTransfers))
        config.buffer_size = 0
        config.on_events = courierEngineEvents
        config.context = router.toOpaque()
        var errorText: UnsafePointer<CChar>?
        let created: OpaquePointer? = {
            if let pem = configuration.trustedCertificatesPEM, !pem.isEmpty {
                return pem.withUnsafeBytes { bytes in
                    config.ca_pem = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
                    config.ca_pem_length = bytes.count
                    return cr_engine_create(&config, &errorText)
                }
            }
            return cr_engine_create(&config, &errorText)
        }()
        guard let created else {
            router.release()
            let text = errorText.map { String(cString: $0) } ?? "the transfer engine could not start"
            throw CourierError(.unknown, text)
        }
        self.pointer = created
        self.router = router
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
        }
    }

    /// Submits one exchange. Returns the transfer id; file descriptors in `spec` pass to the engine on success.
    func submit(_ spec: TransferSpec) -> Result<UInt64, EngineSubmitError> {
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
        request.body_fd = spec.bodyDescriptor
        request.body_fd_length = spec.bodyDescriptorLength
        switch spec.sink {
        case .memory:
            request.sink = CR_SINK_MEMORY
            request.sink_fd = -1
        case .file(let descriptor):
            request.sink = CR_SINK_FILE
            request.sink_fd = descriptor
        case .discard:
            request.sink = CR_SINK_DISCARD
            request.sink_fd = -1
        }
        request.resume_offset = spec.resumeOffset
        request.flags = spec.flags
        switch spec.authentication {
        case .none:
            request.auth = CR_AUTH_NONE
        case .basic(let user, let password):
            request.auth = CR_AUTH_BASIC
            request.username = keep(user)
            request.password = keep(password)
        case .digest(let user, let password):
            request.auth = CR_AUTH_DIGEST
            request.username = keep(user)
            request.password = keep(password)
        }
        request.idle_timeout_ms = spec.idleTimeoutMilliseconds
        request.total_timeout_ms = spec.totalTimeoutMilliseconds
        request.priority = spec.priority
        request.tag = spec.tag
        let headerPointers: [UnsafePointer<CChar>?] = spec.headers.map { keep($0) }
        var engineError = CR_OK
        let transfer: UInt64 = headerPointers.withUnsafeBufferPointer { headers in
            request.headers = headers.baseAddress
            request.header_count = headers.count
            guard let body = spec.body, !body.isEmpty else {
                return cr_engine_submit(pointer, &request, &engineError)
            }
            // Read on demand rather than copied: large bodies in flight cost no second copy.
            request.body_source = EngineBodySource.retained(body)
            let transfer = cr_engine_submit(pointer, &request, &engineError)
            if transfer == 0 {
                EngineBodySource.releaseUnsubmitted(request.body_source)
            }
            return transfer
        }
        if transfer == 0 {
            return .failure(EngineSubmitError(error: engineError == CR_OK ? CR_ERR_INTERNAL : engineError))
        }
        return .success(transfer)
    }

    func cancel(_ transfer: UInt64) {
        cr_transfer_cancel(pointer, transfer)
    }

    func pause(_ transfer: UInt64) {
        cr_transfer_pause(pointer, transfer)
    }

    func resume(_ transfer: UInt64) {
        cr_transfer_resume(pointer, transfer)
    }

    enum Decision {
        case allow
        case cancel
        case toFile(descriptor: Int32)
    }

    func decide(_ transfer: UInt64, _ decision: Decision) {
        switch decision {
        case .allow: cr_transfer_decide(pointer, transfer, CR_DECIDE_ALLOW, -1)
        case .cancel: cr_transfer_decide(pointer, transfer, CR_DECIDE_CANCEL, -1)
        case .toFile(let descriptor): cr_transfer_decide(pointer, transfer, CR_DECIDE_TO_FILE, descriptor)
        }
    }

    struct Statistics: Sendable {
        var queued: Int64
        var active: Int64
        var completed: Int64
        var openHandles: Int64
    }

    var statistics: Statistics {
        var stats = cr_engine_stats_t()
        cr_engine_stats(pointer, &stats)
        return Statistics(
            queued: stats.queued,
            active: stats.active,
            completed: stats.completed,
            openHandles: stats.open_handles
        )
    }
}
