internal import CSupport
import Foundation

extension TransferEvent {
    /// Decodes one C event, taking ownership of its owned pointers: DATA is wrapped without a copy, the header
    /// block is parsed into a ``ResponseHead``, the message is copied, and everything is freed exactly once.
    init(taking event: cr_event_t) {
        let payload: Payload
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
        case CR_EVENT_INFORMATIONAL:
            payload = .informational(
                ResponseHead(
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
            var error: CourierError?
            if event.error != CR_OK {
                let message = event.message.map { String(cString: $0) }
                error = CourierError(
                    engineError: event.error,
                    curlCode: event.curl_code,
                    osError: event.os_error,
                    message: message,
                    url: nil
                )
            }
            payload = .complete(
                TransferCompletion(
                    error: error,
                    bytesOnDisk: event.bytes_on_disk,
                    metrics: TransferMetrics(event.metrics),
                    digest: withUnsafeBytes(of: event.digest) { Checksum(engineKind: event.digest_kind, bytes: $0) },
                    peerTrust: event.error == CR_ERR_TRUST_PENDING
                        ? event.peer_certificates.map {
                            PeerTrustReport(
                                certificates: PeerTrustReport.certificates(fromPEM: String(cString: $0)),
                                verifyResult: Int(event.verify_result)
                            )
                        } : nil
                )
            )
        default:
            payload = .progress
        }
        // Every owned pointer is released whatever the kind (the header says: also when ignored).
        free(event.headers)
        free(event.message)
        free(event.peer_certificates)
        if event.kind != CR_EVENT_DATA {
            free(event.data)
        }
        var progress = TransferProgress(
            received: event.received,
            expectedToReceive: event.expected_to_receive,
            sent: event.sent,
            expectedToSend: event.expected_to_send
        )
        progress.bytesOnDisk = event.bytes_on_disk > 0 ? event.bytes_on_disk : nil
        self.init(id: Engine.transferID(tag: event.tag), transfer: event.transfer, progress: progress, payload: payload)
    }
}

extension TransferMetrics {
    init(_ m: cr_metrics_t) {
        self.init()
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
        remoteAddress = withUnsafeBytes(of: &copy.remote_ip) { TransferMetrics.string(fromCField: $0) }
        localAddress = withUnsafeBytes(of: &copy.local_ip) { TransferMetrics.string(fromCField: $0) }
    }

    private static func string(fromCField bytes: UnsafeRawBufferPointer) -> String {
        let length = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<length]), as: UTF8.self)
    }
}

extension Checksum {
    /// The digest of a COMPLETE event: the first 32, 64 or 4 of `bytes` for `kind`; nil for `CR_DIGEST_NONE`.
    init?(engineKind kind: cr_digest_t, bytes: UnsafeRawBufferPointer) {
        let algorithm: Algorithm
        switch kind {
        case CR_DIGEST_SHA256: algorithm = .sha256
        case CR_DIGEST_SHA512: algorithm = .sha512
        case CR_DIGEST_CRC32C: algorithm = .crc32c
        default: return nil
        }
        self.init(algorithm, digest: Data(bytes.prefix(algorithm.length)))
    }
}
