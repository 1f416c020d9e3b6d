import CourierIPC
import Foundation

/// The opening handshake of a client (RFC 6455 §4.1): the fields of the request, and the checks of the response.
struct WebSocketHandshake: Sendable {
    /// `Sec-WebSocket-Key`: 16 random bytes, base64.
    let key: String
    /// The subprotocols offered, in order of preference.
    let protocols: [String]

    /// A handshake with a new random key (or `key`, for tests).
    init(protocols: [String], key: String? = nil) {
        self.key = key ?? Data((0 ..< 16).map { _ in UInt8.random(in: .min ... .max) }).base64EncodedString()
        self.protocols = protocols
    }

    /// The fields the request carries besides the caller's.
    var requestFields: [(String, String)] {
        var fields = [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Version", "13"),
        ]
        if !protocols.isEmpty {
            fields.append(("Sec-WebSocket-Protocol", protocols.joined(separator: ", ")))
        }
        return fields
    }

    /// What the server must answer in `Sec-WebSocket-Accept`.
    var expectedAccept: String {
        SHA1.hash(Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)).base64EncodedString()
    }

    /// The subprotocol the server chose (nil for none), or why its response does not open a WebSocket.
    func check(_ head: ResponseHead) -> Result<String?, CourierError> {
        func refused(_ reason: String) -> Result<String?, CourierError> {
            .failure(CourierError(.badServerResponse, "the server did not open a WebSocket: \(reason)"))
        }
        guard head.status == 101 else {
            return refused("it answered \(head.status) instead of 101 Switching Protocols")
        }
        guard head.value("Upgrade")?.trimmingCharacters(in: .whitespaces).lowercased() == "websocket" else {
            return refused("its Upgrade field is not websocket")
        }
        let connection = head.value("Connection")?.lowercased().split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? []
        guard connection.contains("upgrade") else {
            return refused("its Connection field does not name upgrade")
        }
        guard head.value("Sec-WebSocket-Accept")?.trimmingCharacters(in: .whitespaces) == expectedAccept else {
            return refused("its Sec-WebSocket-Accept does not answer the key")
        }
        if let extensions = head.value("Sec-WebSocket-Extensions"), !extensions.isEmpty {
            return refused("it named extensions (\(extensions)) that were not offered")
        }
        guard let chosen = head.value("Sec-WebSocket-Protocol")?.trimmingCharacters(in: .whitespaces),
            !chosen.isEmpty
        else {
            return .success(nil)
        }
        guard protocols.contains(chosen) else {
            return refused("it chose the subprotocol \(chosen), which was not offered")
        }
        return .success(chosen)
    }
}
