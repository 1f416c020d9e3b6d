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
            if frame.fin {
                return try Self.message(frame.opcode, frame.payload)
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
            bytes.append(frame.payload)
            guard frame.fin else {
                partial = (opcode, bytes)
                return nil
            }
            partial = nil
            return try Self.message(opcode, bytes)
        }
    }

    private static func message(_ opcode: WebSocketFrame.Opcode, _ bytes: Data) throws(WebSocketViolation) -> Event {
        guard opcode == .text else {
            return .binary(bytes)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw WebSocketViolation(closeCode: 1007, reason: "a text message that is not UTF-8")
        }
        return .text(text)
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
        let sendable = (1000 ... 1003).contains(code) || (1007 ... 1014).contains(code) || (3000 ... 4999).contains(code)
        guard sendable else {
            throw WebSocketViolation(closeCode: 1002, reason: "a Close frame with the code \(code), which no peer sends")
        }
        let reason = Data(payload.dropFirst(2))
        guard String(validating: reason, as: UTF8.self) != nil else {
            throw WebSocketViolation(closeCode: 1007, reason: "a Close frame whose reason is not UTF-8")
        }
        return .close(code: code, reason: reason)
    }
}
