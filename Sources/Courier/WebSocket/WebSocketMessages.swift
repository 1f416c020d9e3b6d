import Foundation

/// What the frames a server sent mean, once put together (RFC 6455 §5.4–5.5): whole messages from their fragments
/// (text checked as UTF-8, §8.1), and the control frames, which may come between the fragments of a message.
struct WebSocketMessageAssembler {
    enum Event: Equatable {
        case text(String)
        case binary(Data)
        case ping(Data)
        case pong(Data)
        /// The server's Close: its code (nil when it sent none) and reason.
        case close(code: Int?, reason: Data)
    }

    var maximumMessageSize: Int
    /// The message whose fragments are arriving: its opcode and the bytes so far.
    private var partial: (opcode: WebSocketFrame.Opcode, bytes: Data)?
    /// A text message's UTF-8 so far, checked fragment by fragment: invalid bytes fail the connection when they
    /// arrive, not when the message is complete (RFC 6455 §8.1, "fail fast").
    private var utf8 = UTF8Check()

    init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    mutating func take(_ frame: WebSocketFrame) throws(WebSocketViolation) -> Event? {
        switch frame.opcode {
        case .ping:
            return .ping(frame.payload)
        case .pong:
            return .pong(frame.payload)
        case .close:
            return try Self.close(frame.payload)
        case .text, .binary:
            guard partial == nil else {
                throw WebSocketViolation(closeCode: 1002, reason: "a new message before the last one's final fragment")
            }
            utf8 = UTF8Check()
            if frame.opcode == .text {
                try utf8.take(frame.payload)
            }
            if frame.fin {
                return try message(frame.opcode, frame.payload)
            }
            partial = (frame.opcode, frame.payload)
            return nil
        case .continuation:
            guard let (opcode, received) = partial else {
                throw WebSocketViolation(closeCode: 1002, reason: "a continuation frame with no message to continue")
            }
            var bytes = received
            guard bytes.count + frame.payload.count <= maximumMessageSize else {
                throw WebSocketViolation(closeCode: 1009, reason: "a message over the maximum message size")
            }
            if opcode == .text {
                try utf8.take(frame.payload)
            }
            bytes.append(frame.payload)
            guard frame.fin else {
                partial = (opcode, bytes)
                return nil
            }
            partial = nil
            return try message(opcode, bytes)
        }
    }

    /// A whole message; a text one was checked as its fragments came, and must not end inside a character.
    private func message(_ opcode: WebSocketFrame.Opcode, _ bytes: Data) throws(WebSocketViolation) -> Event {
        guard opcode == .text else {
            return .binary(bytes)
        }
        guard utf8.isComplete else {
            throw WebSocketViolation(closeCode: 1007, reason: "a text message that ends inside a UTF-8 character")
        }
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    /// A Close frame's payload: nothing, or a code a peer may send (§7.4) and a UTF-8 reason.
    private static func close(_ payload: Data) throws(WebSocketViolation) -> Event {
        guard !payload.isEmpty else {
            return .close(code: nil, reason: Data())
        }
        guard payload.count >= 2 else {
            throw WebSocketViolation(closeCode: 1002, reason: "a Close frame with a one-byte payload")
        }
        let start = payload.startIndex
        let code = Int(payload[start]) << 8 | Int(payload[start + 1])
        let sendable = [1000 ... 1003, 1007 ... 1014, 3000 ... 4999].contains { $0.contains(code) }
        guard sendable else {
            throw WebSocketViolation(
                closeCode: 1002,
                reason: "a Close frame with the code \(code), which no peer sends"
            )
        }
        let reason = Data(payload.dropFirst(2))
        guard String(validating: reason, as: UTF8.self) != nil else {
            throw WebSocketViolation(closeCode: 1007, reason: "a Close frame whose reason is not UTF-8")
        }
        return .close(code: code, reason: reason)
    }
}

/// UTF-8 checked as it arrives (Unicode's well-formed byte sequences, table 3-7): no overlong forms, no surrogates,
/// nothing above U+10FFFF; a character may span the pieces.
struct UTF8Check {
    /// Continuation bytes the current character still needs, and the range its next one must be in.
    private var needed = 0
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// No character is cut off.
    var isComplete: Bool {
        needed == 0
    }

    mutating func take(_ bytes: Data) throws(WebSocketViolation) {
        for byte in bytes {
            if needed > 0 {
                guard byte >= lower, byte <= upper else {
                    throw WebSocketViolation(closeCode: 1007, reason: "a text message that is not UTF-8")
                }
                (lower, upper) = (0x80, 0xBF)
                needed -= 1
                continue
            }
            switch byte {
            case 0x00 ... 0x7F: continue
            case 0xC2 ... 0xDF: needed = 1
            case 0xE0: (needed, lower) = (2, 0xA0)
            case 0xE1 ... 0xEC, 0xEE ... 0xEF: needed = 2
            case 0xED: (needed, upper) = (2, 0x9F)
            case 0xF0: (needed, lower) = (3, 0x90)
            case 0xF1 ... 0xF3: needed = 3
            case 0xF4: (needed, upper) = (3, 0x8F)
            default:
                throw WebSocketViolation(closeCode: 1007, reason: "a text message that is not UTF-8")
            }
        }
    }
}
