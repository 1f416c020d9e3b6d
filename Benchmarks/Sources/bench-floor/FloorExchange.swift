import CourierEngineC
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request of ``FloorEngine`` in flight: what its events build up until COMPLETE resumes the caller.
///
/// `@unchecked Sendable`: the continuation is stored before the submit, and every later access happens in the
/// transfer's own events, which the engine delivers in order on one loop thread; the body is immutable.
final class FloorExchange: @unchecked Sendable {
    let url: URL
    let body: Data?
    var continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>?
    var response: HTTPURLResponse?
    var received = Data()

    init(url: URL, body: Data?) {
        self.url = url
        self.body = body
    }

    /// A `cr_borrowed_body_t` over `body` (1 MiB in W5: its bytes live in `Data`'s heap storage, which `body`
    /// holds unchanged), holding its own retain of the exchange, as Courier's `EngineBorrowedBody` does.
    func retainedBorrowedBody(_ body: Data) -> cr_borrowed_body_t {
        var borrowed = cr_borrowed_body_t()
        borrowed.bytes = body.withUnsafeBytes { UnsafeRawPointer($0.baseAddress) }
        borrowed.length = Int64(body.count)
        borrowed.release = { context in
            if let context {
                Unmanaged<FloorExchange>.fromOpaque(context).release()
            }
        }
        borrowed.context = Unmanaged.passRetained(self).toOpaque()
        return borrowed
    }

    /// Handles one event and takes over its DATA buffer; COMPLETE resumes the caller and gives back the tag's
    /// retain.
    func handle(_ event: cr_event_t) {
        switch event.kind {
        case CR_EVENT_RESPONSE:
            let fields = Self.headerFields(UnsafeRawBufferPointer(start: event.headers, count: event.headers_length))
            response = HTTPURLResponse(
                url: url,
                statusCode: Int(event.status),
                httpVersion: "HTTP/1.1",
                headerFields: fields
            )
        case CR_EVENT_DATA:
            guard let data = event.data else {
                return
            }
            if received.isEmpty && event.data_length > 0 {
                received = Data(bytesNoCopy: data, count: event.data_length, deallocator: .free)
            } else {
                received.append(data.assumingMemoryBound(to: UInt8.self), count: event.data_length)
                free(data)
            }
        case CR_EVENT_COMPLETE:
            let continuation = self.continuation
            self.continuation = nil
            if event.error == CR_OK, let response {
                continuation?.resume(returning: (received, response))
            } else {
                let message = event.message.map { String(cString: $0) } ?? "no response"
                continuation?.resume(throwing: FloorError("engine error \(event.error.rawValue): \(message)"))
            }
            Unmanaged.passUnretained(self).release()
        default:
            break
        }
    }

    /// "Name: value" lines after the status line; the last status line's fields count, as in Courier's parser.
    private static func headerFields(_ bytes: UnsafeRawBufferPointer) -> [String: String] {
        var fields: [String: String] = [:]
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let line = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
            if line.starts(with: "HTTP/".utf8) {
                fields = [:]
                continue
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                continue
            }
            let value = line[(colon + 1)...].drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            fields[String(decoding: line[..<colon], as: UTF8.self)] = String(decoding: value, as: UTF8.self)
        }
        return fields
    }
}

/// The engine's `on_events` callback: each event goes to the exchange its tag points at.
let floorEngineEvents: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<cr_event_s>?, Int) -> Void = {
    _,
    events,
    count in
    guard let events else {
        return
    }
    for index in 0..<count {
        let event = events[index]
        // Every tag is a retained exchange (FloorEngine.exchange).
        let exchange = UnsafeRawPointer(bitPattern: UInt(event.tag))!
        Unmanaged<FloorExchange>.fromOpaque(exchange).takeUnretainedValue().handle(event)
        free(event.headers)
        free(event.message)
        if event.kind != CR_EVENT_DATA {
            free(event.data)
        }
    }
}
