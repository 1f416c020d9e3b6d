import Foundation

/// One WebSocket frame (RFC 6455 §5.2), and its encoding by a client (always masked, §5.3).
struct WebSocketFrame: Sendable, Equatable {
    enum Opcode: UInt8, Sendable {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        var isControl: Bool {
            rawValue & 0x8 != 0
        }
    }

    var fin: Bool
    var opcode: Opcode
    var payload: Data

    /// The frame as a client sends it: masked with `key` (four random bytes for each frame).
    func encoded(maskKey key: (UInt8, UInt8, UInt8, UInt8)) -> Data {
        var bytes = Data(capacity: payload.count + 14)
        bytes.append((fin ? 0x80 : 0) | opcode.rawValue)
        let count = payload.count
        if count < 126 {
            bytes.append(0x80 | UInt8(count))
        } else if count <= 0xFFFF {
            bytes.append(0x80 | 126)
            bytes.append(UInt8(count >> 8))
            bytes.append(UInt8(truncatingIfNeeded: count))
        } else {
            bytes.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: UInt64(count) >> UInt64(shift)))
            }
        }
        let mask = [key.0, key.1, key.2, key.3]
        bytes.append(contentsOf: mask)
        let start = bytes.count
        bytes.append(payload)
        bytes.withUnsafeMutableBytes { buffer in
            for index in 0 ..< count {
                buffer[start + index] ^= mask[index & 3]
            }
        }
        return bytes
    }

    /// A random masking key.
    static func randomMaskKey() -> (UInt8, UInt8, UInt8, UInt8) {
        let value = UInt32.random(in: .min ... .max)
        return (UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
                UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 24))
    }

    /// The payload of a Close frame: the code (two bytes, big-endian) and the UTF-8 reason; empty for no code.
    static func closePayload(code: Int?, reason: Data?) -> Data {
        guard let code else {
            return Data()
        }
        var payload = Data([UInt8(truncatingIfNeeded: code >> 8), UInt8(truncatingIfNeeded: code)])
        if let reason {
            payload.append(reason.prefix(123))
        }
        return payload
    }
}

/// Why the bytes a server sent are not WebSocket frames a client may receive: the close code to answer with
/// (RFC 6455 §7.4.1) and what was wrong.
struct WebSocketViolation: Error, Equatable {
    var closeCode: Int
    var reason: String
}

/// Reads frames out of the bytes a server sends, as they arrive in any pieces (§5.2): unmasked frames only, no
/// reserved bits (Courier negotiates no extension), known opcodes, control frames of at most 125 bytes and never
/// fragmented, lengths in their shortest form, payloads within `maximumPayload`.
struct WebSocketFrameParser {
    var maximumPayload: Int
    private var buffer = Data()

    init(maximumPayload: Int) {
        self.maximumPayload = maximumPayload
    }

    /// Adds `bytes` and returns every frame now complete, in order.
    mutating func feed(_ bytes: Data) throws(WebSocketViolation) -> [WebSocketFrame] {
        buffer.append(bytes)
        var frames: [WebSocketFrame] = []
        var offset = 0
        defer {
            // Once per feed: the frames read leave the buffer (not one move per frame).
            if offset == buffer.count {
                buffer = Data()
            } else if offset > 0 {
                buffer = Data(buffer.dropFirst(offset))
            }
        }
        while let (frame, size) = try frame(at: offset) {
            frames.append(frame)
            offset += size
        }
        return frames
    }

    private static func oversized(_ length: UInt64) -> WebSocketViolation {
        WebSocketViolation(closeCode: 1009, reason: "a frame of \(length) bytes, over the maximum message size")
    }

    /// The frame that starts `offset` bytes into the buffer and its size, or nil when it has not all arrived.
    private func frame(at offset: Int) throws(WebSocketViolation) -> (WebSocketFrame, Int)? {
        let start = buffer.startIndex + offset
        let available = buffer.count - offset
        guard available >= 2 else {
            return nil
        }
        let first = buffer[start]
        let second = buffer[start + 1]
        guard first & 0x70 == 0 else {
            throw WebSocketViolation(
                closeCode: 1002,
                reason: "a frame with reserved bits set (no extension was agreed)"
            )
        }
        guard let opcode = WebSocketFrame.Opcode(rawValue: first & 0x0F) else {
            throw WebSocketViolation(closeCode: 1002, reason: "a frame with the unknown opcode \(first & 0x0F)")
        }
        let fin = first & 0x80 != 0
        guard second & 0x80 == 0 else {
            throw WebSocketViolation(closeCode: 1002, reason: "a masked frame from the server")
        }
        var length = Int(second & 0x7F)
        var headerLength = 2
        if length == 126 {
            guard available >= 4 else {
                return nil
            }
            length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            headerLength = 4
            guard length >= 126 else {
                throw WebSocketViolation(closeCode: 1002, reason: "a length not in its shortest form")
            }
        } else if length == 127 {
            guard available >= 10 else {
                return nil
            }
            var value: UInt64 = 0
            for index in 2 ..< 10 {
                value = value << 8 | UInt64(buffer[start + index])
            }
            guard value >> 63 == 0 else {
                throw WebSocketViolation(closeCode: 1002, reason: "a length with its most significant bit set")
            }
            guard value > 0xFFFF else {
                throw WebSocketViolation(closeCode: 1002, reason: "a length not in its shortest form")
            }
            guard value <= UInt64(maximumPayload) else {
                throw Self.oversized(value)
            }
            length = Int(value)
            headerLength = 10
        }
        if opcode.isControl {
            guard fin else {
                throw WebSocketViolation(closeCode: 1002, reason: "a fragmented control frame")
            }
            guard length <= 125 else {
                throw WebSocketViolation(closeCode: 1002, reason: "a control frame of more than 125 bytes")
            }
        } else if length > maximumPayload {
            throw Self.oversized(UInt64(length))
        }
        guard available >= headerLength + length else {
            return nil
        }
        let payload = Data(buffer[(start + headerLength) ..< (start + headerLength + length)])
        return (WebSocketFrame(fin: fin, opcode: opcode, payload: payload), headerLength + length)
    }
}
