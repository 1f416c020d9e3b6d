import CourierEngineC
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Courier's C engine with the least Swift that an async API returning `(Data, HTTPURLResponse)` needs above
/// it: per request one submit, one checked continuation resumed from the event callback, one `Data` and one
/// `HTTPURLResponse`. Courier's `Session` does all of that and more (tasks, delegates, redirects, cookies,
/// metrics), so its W1 and W2 times should not go below this client's beyond run-to-run noise; the gap between
/// the two is what Courier's own Swift layer costs.
///
/// `@unchecked Sendable`: the `cr_*` functions called here are thread-safe (`courier_engine.h`), the pointer is
/// immutable after `init` and destroyed once, in `deinit`.
final class FloorEngine: @unchecked Sendable {
    private let pointer: OpaquePointer

    init(maximumConnections: Int) throws {
        var config = cr_engine_config_t()
        // As Courier's default `engineLoopCount`.
        config.loop_count = Int32(min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4))
        config.max_host_connections = Int32(maximumConnections)
        config.max_active_transfers = Int32(maximumConnections)
        config.on_events = floorEngineEvents
        var error: UnsafePointer<CChar>?
        guard let created = cr_engine_create(&config, &error) else {
            throw FloorError(error.map { String(cString: $0) } ?? "the engine did not start")
        }
        pointer = created
    }

    deinit {
        cr_engine_destroy(pointer)
    }

    /// One exchange: a body from memory (read on demand, as Courier's uploads are), the response body into
    /// memory or, with `sinkDescriptor`, into that file (the engine closes it).
    func exchange(_ url: URL, method: String = "GET", body: Data? = nil, sinkDescriptor: Int32 = -1)
        async throws -> (Data, HTTPURLResponse)
    {
        let exchange = FloorExchange(url: url, body: body)
        return try await withCheckedThrowingContinuation { continuation in
            exchange.continuation = continuation
            var request = cr_request_t()
            request.body_fd = -1
            request.sink = sinkDescriptor >= 0 ? CR_SINK_FILE : CR_SINK_MEMORY
            request.sink_fd = sinkDescriptor
            // The tag carries one retain of the exchange until its COMPLETE event.
            let retained = Unmanaged.passRetained(exchange)
            request.tag = UInt64(UInt(bitPattern: retained.toOpaque()))
            if let body = exchange.body, !body.isEmpty {
                request.borrowed_body = exchange.retainedBorrowedBody(body)
            }
            var error = CR_OK
            let transfer = url.absoluteString.withCString { urlString in
                method.withCString { methodString in
                    request.url = urlString
                    request.method = methodString
                    return cr_engine_submit(pointer, &request, &error)
                }
            }
            if transfer == 0 {
                request.borrowed_body.release?(request.borrowed_body.context)
                if sinkDescriptor >= 0 {
                    close(sinkDescriptor)
                }
                retained.release()
                exchange.continuation = nil
                continuation.resume(throwing: FloorError("the engine refused the request (\(error.rawValue))"))
            }
        }
    }
}

struct FloorError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
