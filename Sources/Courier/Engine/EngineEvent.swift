internal import CSupport
import Foundation

/// Byte counters the engine reports with RESPONSE, PROGRESS and COMPLETE events.
struct EngineProgress: Sendable, Equatable {
    var received: Int64 = 0
    var expectedToReceive: Int64 = -1
    var sent: Int64 = 0
    var expectedToSend: Int64 = -1
}

/// curl's timings for one transfer (one hop), decoded from `cr_metrics_t`.
struct EngineMetrics: Sendable {
    var queuedMicroseconds: Int64 = -1
    var nameLookupMicroseconds: Int64 = -1
    var connectMicroseconds: Int64 = -1
    var tlsMicroseconds: Int64 = -1
    var pretransferMicroseconds: Int64 = -1
    var firstByteMicroseconds: Int64 = -1
    var totalMicroseconds: Int64 = -1
    var requestHeaderBytes: Int64 = 0
    var responseHeaderBytes: Int64 = 0
    var bodyBytesSent: Int64 = 0
    /// Body bytes delivered, after content decoding.
    var bodyBytesReceived: Int64 = 0
    /// Body bytes as they came off the connection, before content decoding; -1 unknown.
    var bodyBytesOnWire: Int64 = 0
    var httpVersion: Int = 0
    var reusedConnection = false
    var remotePort: Int = 0
    var localPort: Int = 0
    var remoteAddress: String = ""
    var localAddress: String = ""
}

/// How a transfer ended, decoded from a COMPLETE event.
struct EngineCompletion: Sendable {
    var error: cr_error_t
    var curlCode: Int32
    var osError: Int32
    var message: String?
    var bytesOnDisk: Int64
    var metrics: EngineMetrics

    var succeeded: Bool { error == CR_OK }
    var wasCancelled: Bool { error == CR_ERR_CANCELLED }
}

/// One engine event as a Swift value. Owned C buffers have been taken over (DATA, without a copy), parsed
/// (the header block, into a ``ResponseHead``) or copied (the message), and freed by the time a value of this
/// type exists.
struct EngineEvent: Sendable {
    enum Payload: Sendable {
        /// The final response of the transfer (or a held 3xx / 401 / 407 / asked response).
        case response(held: Bool, resumeOffset: Int64, head: ResponseHead)
        /// Body bytes of a memory-sink transfer, in order.
        case data(Data)
        /// Counters moved.
        case progress
        /// The transfer ended; its id is dead.
        case complete(EngineCompletion)
    }

    var transfer: UInt64
    var tag: UInt64
    var progress: EngineProgress
    var payload: Payload
}

extension EngineEvent {
    /// Decodes one C event, taking ownership of its owned pointers (they are freed or wrapped here, exactly once).
    init(taking event: cr_event_t) {
        transfer = event.transfer
        tag = event.tag
        progress = EngineProgress(
            received: event.received,
            expectedToReceive: event.expected_to_receive,
            sent: event.sent,
            expectedToSend: event.expected_to_send
        )
        switch event.kind {
        case CR_EVENT_RESPONSE:
            payload = .response(
                held: event.held != 0,
                resumeOffset: event.resume_offset,
                head: ResponseHead(
                    status: Int(event.status),
                    headerBytes: UnsafeRawBufferPointer(start: event.headers, count: event.headers_length)
                )
            )
        case CR_EVENT_DATA:
            if let data = event.data, event.data_length > 0 {
                payload = .data(Data(bytesNoCopy: data, count: event.data_length, deallocator: .free))
            } else {
                free(event.data)
                payload = .data(Data())
            }
        case CR_EVENT_COMPLETE:
            var message: String?
            if let text = event.message {
                message = String(cString: text)
            }
            payload = .complete(
                EngineCompletion(
                    error: event.error,
                    curlCode: event.curl_code,
                    osError: event.os_error,
                    message: message,
                    bytesOnDisk: event.bytes_on_disk,
                    metrics: EngineMetrics(event.metrics)
                )
            )
        default:
            payload = .progress
        }
        // Every owned pointer is released whatever the kind (the header says: also when ignored).
        free(event.headers)
        free(event.message)
        if event.kind != CR_EVENT_DATA {
            free(event.data)
        }
    }
}

extension EngineMetrics {
    init(_ m: cr_metrics_t) {
        queuedMicroseconds = m.queued_us
        nameLookupMicroseconds = m.name_lookup_us
        connectMicroseconds = m.connect_us
        tlsMicroseconds = m.tls_us
        pretransferMicroseconds = m.pretransfer_us
        firstByteMicroseconds = m.first_byte_us
        totalMicroseconds = m.total_us
        requestHeaderBytes = m.request_header_bytes
        responseHeaderBytes = m.response_header_bytes
        bodyBytesSent = m.body_bytes_sent
        bodyBytesReceived = m.body_bytes_received
        bodyBytesOnWire = m.body_bytes_on_wire
        httpVersion = Int(m.http_version)
        reusedConnection = m.reused_connection != 0
        remotePort = Int(m.remote_port)
        localPort = Int(m.local_port)
        var copy = m
        remoteAddress = withUnsafeBytes(of: &copy.remote_ip) { EngineMetrics.string(fromCField: $0) }
        localAddress = withUnsafeBytes(of: &copy.local_ip) { EngineMetrics.string(fromCField: $0) }
    }

    private static func string(fromCField bytes: UnsafeRawBufferPointer) -> String {
        let length = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<length]), as: UTF8.self)
    }
}
