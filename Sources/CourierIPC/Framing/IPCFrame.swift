package import Foundation

/// One frame of the courierd protocol (`docs/ipc.md`): an 8-byte header (payload length, protocol version,
/// message type, all big-endian) and a JSON payload.
package struct IPCFrame: Sendable, Equatable {
    /// The version this build speaks.
    package static let currentVersion: UInt16 = 1
    package static let headerLength = 8
    /// The largest payload a reader accepts; a frame announcing more is refused before its payload is read.
    package static let maximumPayloadLength = 4 << 20

    package var version: UInt16
    package var type: UInt16
    package var payload: Data

    package init(version: UInt16 = IPCFrame.currentVersion, type: UInt16, payload: Data) {
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
    /// The payload is not the JSON body of its message type.
    case malformedPayload(type: UInt16, reason: String)
    /// The connection ended inside a frame.
    case truncated(bufferedBytes: Int)

    package var description: String {
        switch self {
        case .oversized(let length, let limit):
            return "a frame announced \(length) payload bytes; the limit is \(limit)"
        case .unsupportedVersion(let version):
            return "protocol version \(version) is not supported (this build speaks \(IPCFrame.currentVersion))"
        case .unknownType(let type):
            return "unknown message type \(type)"
        case .malformedPayload(let type, let reason):
            return "the payload of a message of type \(type) does not decode: \(reason)"
        case .truncated(let buffered):
            return "the connection ended inside a frame (\(buffered) bytes of it received)"
        }
    }
}
