package import Foundation

/// One frame of the courierd protocol (`docs/ipc.md`): an 8-byte header (payload length, protocol version,
/// message type, all big-endian) and the payload: a JSON object in version 1, a value in the record format
/// (``RecordEncoder``) in version 2. Each frame says its version and is read by it; a peer writes version 2 once the
/// other side said it reads it (`hello`'s and `welcome`'s `protocolVersion`).
package struct IPCFrame: Sendable, Equatable {
    /// JSON payloads: what every peer reads, and what each writes until the other said it reads more.
    package static let jsonVersion: UInt16 = 1
    /// Payloads in the record format.
    package static let recordVersion: UInt16 = 2
    /// The newest version this build reads and writes.
    package static let newestVersion = recordVersion

    /// The version to write to a peer whose newest is `peerNewest` (nil: a peer older than the field, 1).
    package static func version(toWriteFor peerNewest: UInt16?) -> UInt16 {
        min(max(peerNewest ?? jsonVersion, jsonVersion), newestVersion)
    }

    /// Whether this build reads frames of `version`.
    package static func reads(_ version: UInt16) -> Bool {
        version == jsonVersion || version == recordVersion
    }
    package static let headerLength = 8
    /// The largest payload a reader accepts; a frame announcing more is refused before its payload is read.
    package static let maximumPayloadLength = 4 << 20

    package var version: UInt16
    package var type: UInt16
    package var payload: Data

    package init(version: UInt16 = IPCFrame.jsonVersion, type: UInt16, payload: Data) {
        self.version = version
        self.type = type
        self.payload = payload
    }

    /// The frame's bytes, header first.
    package var encoded: Data {
        var bytes = Data(capacity: IPCFrame.headerLength + payload.count)
        let length = UInt32(payload.count)
        bytes.append(contentsOf: [
            UInt8(truncatingIfNeeded: length >> 24), UInt8(truncatingIfNeeded: length >> 16),
            UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
            UInt8(truncatingIfNeeded: version >> 8), UInt8(truncatingIfNeeded: version),
            UInt8(truncatingIfNeeded: type >> 8), UInt8(truncatingIfNeeded: type),
        ])
        bytes.append(payload)
        return bytes
    }
}

/// Why a peer's bytes were refused. The receiver logs it and closes the connection.
package enum IPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The header announced a payload over ``IPCFrame/maximumPayloadLength``.
    case oversized(length: Int, limit: Int)
    case unsupportedVersion(UInt16)
    case unknownType(UInt16)
    /// The payload is not the body of its message type.
    case malformedPayload(type: UInt16, reason: String)
    /// The connection ended inside a frame.
    case truncated(bufferedBytes: Int)

    package var description: String {
        switch self {
        case .oversized(let length, let limit):
            return "a frame announced \(length) payload bytes; the limit is \(limit)"
        case .unsupportedVersion(let version):
            return "protocol version \(version) is not supported (this build speaks 1 and 2)"
        case .unknownType(let type):
            return "unknown message type \(type)"
        case .malformedPayload(let type, let reason):
            return "the payload of a message of type \(type) does not decode: \(reason)"
        case .truncated(let buffered):
            return "the connection ended inside a frame (\(buffered) bytes of it received)"
        }
    }
}
