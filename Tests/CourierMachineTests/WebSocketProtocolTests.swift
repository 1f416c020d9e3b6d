import CourierIPC
import Foundation
import Testing

@testable import Courier

/// The pure parts of the WebSocket client: the handshake's checks, frames both ways, message assembly and UTF-8.
@Suite("WebSocket protocol (pure)")
struct WebSocketProtocolTests {
    @Test("SHA-1 and the handshake's accept value are RFC 6455's example")
    func handshakeAccept() {
        #expect(SHA1.hash(Data("abc".utf8)).map { String(format: "%02x", $0) }.joined()
            == "a9993e364706816aba3e25717850c26c9cd0d89d")
        let handshake = WebSocketHandshake(protocols: ["chat"], key: "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(handshake.expectedAccept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let good = ResponseHead(
            status: 101,
            fields: [
                "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                "Sec-WebSocket-Protocol": "chat",
            ]
        )
        #expect((try? handshake.check(good).get()) == "chat")
        var other = good
        other.fieldLines.removeAll { $0.name == "Sec-WebSocket-Protocol" }
        other.fieldLines.append(.init(name: "Sec-WebSocket-Protocol", value: "superchat"))
        #expect((try? handshake.check(other).get()) == nil)
        #expect((try? handshake.check(ResponseHead(status: 200, fields: [:])).get()) == nil)
    }

    @Test("client frames are masked, with the three length forms; the parser reads server frames in any pieces")
    func frames() throws {
        for count in [0, 125, 126, 65535, 65536] {
            let frame = WebSocketFrame(fin: true, opcode: .binary, payload: Data(repeating: 7, count: count))
            let bytes = frame.encoded(maskKey: (1, 2, 3, 4))
            #expect(bytes[1] & 0x80 != 0)
            // What a server sends is the same frame unmasked: build it from the masked one.
            var unmasked = Data([bytes[0], bytes[1] & 0x7F])
            let header = count < 126 ? 2 : count <= 0xFFFF ? 4 : 10
            unmasked.append(bytes[2 ..< header])
            unmasked.append(Data(repeating: 7, count: count))
            var parser = WebSocketFrameParser(maximumPayload: 1 << 20)
            var frames: [WebSocketFrame] = []
            for piece in stride(from: 0, to: unmasked.count, by: 1000) {
                frames += try parser.feed(unmasked.subdata(in: piece ..< min(piece + 1000, unmasked.count)))
            }
            #expect(frames == [frame])
        }
    }

    @Test("what a server must not send is refused with the close code RFC 6455 names")
    func violations() {
        func code(_ bytes: [UInt8], maximum: Int = 1 << 20) -> Int? {
            var parser = WebSocketFrameParser(maximumPayload: maximum)
            var assembler = WebSocketMessageAssembler(maximumMessageSize: maximum)
            do {
                for frame in try parser.feed(Data(bytes)) {
                    _ = try assembler.take(frame)
                }
                return nil
            } catch {
                return error.closeCode
            }
        }
        #expect(code([0x81, 0x82, 1, 2, 3, 4, 0, 0]) == 1002)  // masked
        #expect(code([0xC1, 0x00]) == 1002)  // RSV1
        #expect(code([0x83, 0x00]) == 1002)  // opcode 3
        #expect(code([0x09, 0x00]) == 1002)  // fragmented ping
        #expect(code([0x89, 0x7E, 0x00, 0x7E] + Array(repeating: 0, count: 126)) == 1002)  // long ping
        #expect(code([0x82, 0x7E, 0x00, 0x05, 1, 2, 3, 4, 5]) == 1002)  // not the shortest length
        #expect(code([0x80, 0x00]) == 1002)  // continuation of nothing
        #expect(code([0x01, 0x01, 0x61, 0x81, 0x01, 0x62]) == 1002)  // new message inside one
        #expect(code([0x82, 0x05, 1, 2, 3, 4, 5], maximum: 4) == 1009)
        #expect(code([0x88, 0x01, 0x03]) == 1002)  // one-byte close payload
        #expect(code([0x88, 0x02, 0x03, 0xED]) == 1002)  // close code 1005 on the wire
        #expect(code([0x81, 0x02, 0xC3, 0x28]) == 1007)
        #expect(code([0x81, 0x03, 0xED, 0xA0, 0x80]) == 1007)  // a surrogate
        #expect(code([0x81, 0x02, 0x68, 0x69]) == nil)
    }

    @Test("fragments make one message; control frames between them pass; UTF-8 fails at the fragment that breaks it")
    func assembly() throws {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        // "héllo" split inside the é, with a ping between the fragments.
        let text = Array("héllo".utf8)
        #expect(try assembler.take(WebSocketFrame(fin: false, opcode: .text, payload: Data(text[0 ..< 2]))) == nil)
        #expect(try assembler.take(WebSocketFrame(fin: true, opcode: .ping, payload: Data([9]))) == .ping(Data([9])))
        let whole = try assembler.take(WebSocketFrame(fin: true, opcode: .continuation, payload: Data(text[2...])))
        #expect(whole == .text("héllo"))
        // An invalid byte in the second of three fragments fails there, before the third.
        _ = try assembler.take(WebSocketFrame(fin: false, opcode: .text, payload: Data("ok".utf8)))
        #expect(throws: WebSocketViolation.self) {
            _ = try assembler.take(WebSocketFrame(fin: false, opcode: .continuation, payload: Data([0xF5])))
        }
        var cut = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(throws: WebSocketViolation.self) {
            _ = try cut.take(WebSocketFrame(fin: true, opcode: .text, payload: Data([0x68, 0xC3])))
        }
    }
}
