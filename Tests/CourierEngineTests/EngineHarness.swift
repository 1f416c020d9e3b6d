import CSupport
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// glibc's `malloc_usable_size` (in `malloc.h`, which the Glibc module leaves out): the bytes a block can hold.
private let mallocUsableSize = unsafeBitCast(
    dlsym(nil, "malloc_usable_size"),
    to: (@convention(c) (UnsafeMutableRawPointer?) -> Int).self
)

/// Runs `body` with a new test server and a new engine. Whatever `body` does (returns, throws, or throws because a
/// wait in it timed out), the engine is destroyed, so that no loop calls back any more, and the server is shut down
/// before this returns; then no engine loop may have leaked.
func withEngine<T>(
    server configuration: TestServer.Configuration = .init(),
    loops: Int32 = 2,
    maxHostConnections: Int32 = 0,
    maxActive: Int32 = 0,
    trustingServer: Bool = false,
    _ body: (EngineHarness, TestServer) async throws -> T
) async throws -> T {
    let server = try await TestServer.start(configuration)
    let result: T
    do {
        result = try await withEngine(
            on: server, loops: loops, maxHostConnections: maxHostConnections, maxActive: maxActive,
            trustingServer: trustingServer, body)
    } catch {
        try? await server.shutdown()
        throw error
    }
    try await server.shutdown()
    return result
}

/// Runs `body` with a new engine for a server the caller owns (and shuts down); the engine is destroyed whatever
/// `body` does.
func withEngine<T>(
    on server: TestServer,
    loops: Int32 = 2,
    maxHostConnections: Int32 = 0,
    maxActive: Int32 = 0,
    trustingServer: Bool = false,
    _ body: (EngineHarness, TestServer) async throws -> T
) async throws -> T {
    let caPEM: Data?
    if trustingServer {
        caPEM = try #require(server.certificateAuthority).pem
    } else {
        caPEM = nil
    }
    let engine = try EngineHarness(
        loops: loops, maxHostConnections: maxHostConnections, maxActive: maxActive, caPEM: caPEM)
    let result: T
    do {
        result = try await body(engine, server)
    } catch {
        engine.destroy()
        throw error
    }
    engine.destroy()
    #expect(cr_leaked_loop_count() == 0)
    return result
}

/// Runs `body` with a raw server (a canned byte response) that is shut down whatever `body` does.
func withRawServer<T>(
    response: Data, closeAfter: Bool = true, _ body: (RawServer) async throws -> T
) async throws -> T {
    let raw = try await RawServer.start(response: response, closeAfter: closeAfter)
    let result: T
    do {
        result = try await body(raw)
    } catch {
        try? await raw.shutdown()
        throw error
    }
    try await raw.shutdown()
    return result
}

/// What one transfer reported, assembled from the engine's event batches.
struct TransferRecord: Sendable {
    var responseCount = 0
    var status: Int32 = 0
    var held = false
    var responseOffset: Int64 = -1
    var headers = ""
    var body = Data()
    var dataEvents = 0
    /// The most a DATA event's buffer held beyond its bytes (`malloc_usable_size` − `data_length`).
    var largestDataSlack = 0
    var progressEvents = 0
    var lastReceived: Int64 = 0
    var expectedToReceive: Int64 = -1
    /// Events that arrived while the response was held and undecided (DATA, or COMPLETE without an error).
    var eventsWhileHeld = 0
    var bodyBytesOnWire: Int64 = 0
    var eventsAfterCompletion = 0
    var completed = false
    var error: cr_error_t = CR_OK
    var curlCode: Int32 = 0
    var message: String?
    var bytesOnDisk: Int64 = 0
    var httpVersion: Int32 = 0
    var reusedConnection = false
}

/// A C engine driven directly from Swift, the way the Courier library drives it, with every event recorded.
///
/// `@unchecked Sendable`: `engine` is written once, in `init`, before any other thread can see the harness,
/// and the C API it points to is thread-safe; all other mutable state lives in `LockedValue`s.
final class EngineHarness: @unchecked Sendable {
    private var engine: OpaquePointer?
    private let records = LockedValue<[UInt64: TransferRecord]>([:])
    /// Decision taken, from inside the event callback, for every held response; nil leaves them held.
    let heldDecision = LockedValue<cr_decision_t?>(nil)
    /// Transfers to pause from inside the event callback once they have received this many bytes, so that a
    /// test does not depend on how soon its own task is scheduled.
    private let pauseThresholds = LockedValue<[UInt64: Int64]>([:])

    func pause(_ id: UInt64, whenReceived threshold: Int64) {
        pauseThresholds.withLock { $0[id] = threshold }
    }

    init(loops: Int32 = 2, maxHostConnections: Int32 = 0, maxActive: Int32 = 0, caPEM: Data? = nil) throws {
        var config = cr_engine_config_t()
        config.loop_count = loops
        config.max_host_connections = maxHostConnections
        config.max_active_transfers = maxActive
        config.on_events = { context, events, count in
            let harness = Unmanaged<EngineHarness>.fromOpaque(context!).takeUnretainedValue()
            harness.receive(UnsafeBufferPointer(start: events, count: count))
        }
        var created: OpaquePointer?
        var failure: UnsafePointer<CChar>?
        // No loop calls back before something is submitted, which needs init to have returned.
        config.context = Unmanaged.passUnretained(self).toOpaque()
        if let caPEM {
            created = caPEM.withUnsafeBytes { raw in
                config.ca_pem = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
                config.ca_pem_length = raw.count
                return cr_engine_create(&config, &failure)
            }
        } else {
            created = cr_engine_create(&config, &failure)
        }
        guard let created else {
            throw HarnessError.engineDidNotStart(failure.map { String(cString: $0) } ?? "?")
        }
        engine = created
    }

    private let destroyOnce = OnceFlag()
    private let destroyed = LockedValue(false)

    /// Destroys the engine; no event arrives after this returns. Safe to call more than once.
    func destroy() {
        if destroyOnce.claim() {
            cr_engine_destroy(engine)
            destroyed.withLock { $0 = true }
        }
    }

    /// Whether `destroy()` has run (the engine must not be used after it).
    var isDestroyed: Bool { destroyed.withLock { $0 } }

    /// A test that throws before `destroy()` must not leave loops calling back into a freed harness
    /// (the callback's context is unretained).
    deinit {
        destroy()
    }

    func submit(
        _ url: String,
        method: String = "GET",
        headers: [String] = [],
        body: Data? = nil,
        bodyFile: (fd: Int32, length: Int64)? = nil,
        sink: cr_sink_t = CR_SINK_MEMORY,
        sinkFD: Int32 = -1,
        resumeOffset: Int64 = 0,
        flags: UInt32 = 0,
        idleTimeoutMs: Int64 = 0,
        totalTimeoutMs: Int64 = 0
    ) -> (id: UInt64, error: cr_error_t) {
        let cHeaders = headers.map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        var error = CR_OK
        let id: UInt64 = url.withCString { cURL in
            method.withCString { cMethod in
                cHeaders.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerLines in
                    (body ?? Data()).withUnsafeBytes { bodyBytes in
                        var request = cr_request_t()
                        request.url = cURL
                        request.method = cMethod
                        request.headers = headerLines.baseAddress
                        request.header_count = headerLines.count
                        request.body = bodyBytes.baseAddress
                        request.body_length = bodyBytes.count
                        request.body_fd = bodyFile?.fd ?? -1
                        request.body_fd_length = bodyFile?.length ?? 0
                        request.sink = sink
                        request.sink_fd = sinkFD
                        request.resume_offset = resumeOffset
                        request.flags = flags
                        request.idle_timeout_ms = idleTimeoutMs
                        request.total_timeout_ms = totalTimeoutMs
                        return cr_engine_submit(engine, &request, &error)
                    }
                }
            }
        }
        if id != 0 {
            records.withLock { $0[id] = $0[id] ?? TransferRecord() }
        }
        return (id, error)
    }

    func cancel(_ id: UInt64) { cr_transfer_cancel(engine, id) }
    func pause(_ id: UInt64) { cr_transfer_pause(engine, id) }
    func resume(_ id: UInt64) { cr_transfer_resume(engine, id) }
    func decide(_ id: UInt64, _ decision: cr_decision_t, fd: Int32 = -1) {
        records.withLock { $0[id]?.held = false }
        cr_transfer_decide(engine, id, decision, fd)
    }

    func stats() -> cr_engine_stats_t {
        var stats = cr_engine_stats_t()
        cr_engine_stats(engine, &stats)
        return stats
    }

    func record(_ id: UInt64) -> TransferRecord {
        records.withLock { $0[id] ?? TransferRecord() }
    }

    /// Waits until every transfer in `ids` has completed, or throws after `timeout`.
    func waitForCompletion(_ ids: [UInt64], timeout: Duration = .seconds(120)) async throws {
        try await poll(timeout: timeout) {
            records.withLock { all in ids.allSatisfy { all[$0]?.completed == true } }
        }
    }

    /// Waits until `condition` holds for the record of `id`.
    func wait(for id: UInt64, timeout: Duration = .seconds(10), until condition: (TransferRecord) -> Bool)
        async throws
    {
        try await poll(timeout: timeout) { condition(record(id)) }
    }

    /// Looks at `done` every 5 ms until it holds; throws once `timeout` has passed and it still does not. It looks
    /// once more after the deadline: a test task woken late (the cooperative pool busy with the tests around it, as
    /// a full parallel run made it for more than 10 s) must not time out on an engine that had answered.
    private func poll(timeout: Duration, _ done: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !done() {
            guard ContinuousClock.now < deadline else {
                throw HarnessError.timedOut
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    private func receive(_ events: UnsafeBufferPointer<cr_event_t>) {
        var decisions: [(UInt64, cr_decision_t)] = []
        var pauses: [UInt64] = []
        let decision = heldDecision.withLock { $0 }
        records.withLock { all in
            for event in events {
                var record = all[event.transfer] ?? TransferRecord()
                if record.completed { record.eventsAfterCompletion += 1 }
                record.lastReceived = event.received
                record.expectedToReceive = event.expected_to_receive
                switch event.kind {
                case CR_EVENT_RESPONSE:
                    record.responseCount += 1
                    record.status = event.status
                    record.held = event.held != 0
                    record.responseOffset = event.resume_offset
                    if let headers = event.headers {
                        record.headers = String(cString: headers)
                    }
                    if event.held != 0, let decision { decisions.append((event.transfer, decision)) }
                case CR_EVENT_DATA:
                    if record.held { record.eventsWhileHeld += 1 }
                    record.dataEvents += 1
                    if let data = event.data {
                        record.body.append(data.assumingMemoryBound(to: UInt8.self), count: event.data_length)
                        record.largestDataSlack = max(
                            record.largestDataSlack, mallocUsableSize(data) - event.data_length)
                    }
                case CR_EVENT_PROGRESS:
                    record.progressEvents += 1
                case CR_EVENT_COMPLETE:
                    if record.held && event.error == CR_OK { record.eventsWhileHeld += 1 }
                    record.completed = true
                    record.error = event.error
                    record.curlCode = event.curl_code
                    record.message = event.message.map { String(cString: $0) }
                    record.bytesOnDisk = event.bytes_on_disk
                    record.httpVersion = event.metrics.http_version
                    record.reusedConnection = event.metrics.reused_connection != 0
                    record.bodyBytesOnWire = event.metrics.body_bytes_on_wire
                default:
                    break
                }
                all[event.transfer] = record
                let reached = pauseThresholds.withLock { thresholds in
                    guard let threshold = thresholds[event.transfer], event.received >= threshold else { return false }
                    thresholds[event.transfer] = nil
                    return true
                }
                if reached { pauses.append(event.transfer) }
                free(event.headers)
                free(event.data)
                free(event.message)
            }
        }
        for (id, decision) in decisions {
            decide(id, decision)
        }
        for id in pauses {
            cr_transfer_pause(engine, id)
        }
    }
}

enum HarnessError: Error {
    case engineDidNotStart(String)
    case timedOut
}

/// A temporary file for a download sink; removed by `remove()`.
struct TemporaryFile {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "courier-engine-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
    }

    /// A new descriptor the engine may own (and close).
    func openForWriting() -> Int32 { open(path, O_RDWR) }

    func contents() -> Data { (try? fileContents(URL(fileURLWithPath: path))) ?? Data() }

    func write(_ data: Data) { _ = FileManager.default.createFile(atPath: path, contents: data) }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
