import NIOCore

/// `GET /garbage`: on HTTP/1, bytes that are not an HTTP response, then close; on HTTP/2, a stream reset.
enum GarbageRoute {
    static let bytes: [UInt8] = Array("\u{1}\u{2}GARBAGE \u{0} this is not HTTP\r\n\u{7F}\u{FF}\r\n\r\n".utf8)

    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        var plan = ResponsePlan(status: .ok)
        plan.special = .garbage(ByteBuffer(bytes: bytes))
        return plan
    }
}
