import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// WebSocket tasks against the test server's RFC 6455 endpoint (NIOWebSocket): messages both ways, fragmentation,
/// pings, both close handshakes, what a server must not send, limits and backpressure; `wss` in the HTTP/2 pass.
@Suite("WebSocket tasks")
struct WebSocketTests {
    /// Records the WebSocket calls and the end.
    final class SocketDelegate: SessionWebSocketDelegate, Sendable {
        let log = EventLog<String>()

        func urlSession(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?) {
            log.append("open \(`protocol` ?? "-")")
        }

        func urlSession(
            _ session: Session,
            webSocketTask: WebSocketTask,
            didCloseWith closeCode: WebSocketTask.CloseCode,
            reason: Data?
        ) {
            log.append("close \(closeCode.rawValue) \(reason.map { String(decoding: $0, as: UTF8.self) } ?? "-")")
        }

        func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
            log.append("complete \(CourierError.Code.of(error).map { "\($0.rawValue)" } ?? "nil")")
        }

        func urlSession(
            _ session: Session,
            didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            completionHandler(.performDefaultHandling, nil)
        }

        /// Waits for the task's end and returns every call.
        func ended() async throws -> [String] {
            try await log.wait { $0.contains { $0.hasPrefix("complete") } }
        }
    }

    /// `path` on the server as a `ws`/`wss` URL.
    static func socketURL(_ server: TestServer, _ path: String) -> URL {
        var components = URLComponents(url: server.url(path), resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        return components.url!
    }

    static func session() -> (Session, SocketDelegate) {
        let delegate = SocketDelegate()
        return (Session(configuration: testConfiguration(), delegate: delegate), delegate)
    }

    @Test("text and binary messages echo; the subprotocol is chosen; a close handshake ends the task cleanly")
    func echoAndClose() async throws {
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: Self.socketURL(server, "/ws/echo"), protocols: ["superchat", "x"])
            task.resume()
            try await task.send(.string("héllo"))
            try await task.send(.data(Data([0, 1, 2, 255])))
            let big = Data((0 ..< 200_000).map { UInt8(truncatingIfNeeded: $0 * 31) })
            try await task.send(.data(big))
            #expect(try await task.receive() == .string("héllo"))
            #expect(try await task.receive() == .data(Data([0, 1, 2, 255])))
            #expect(try await task.receive() == .data(big))
            task.cancel(with: .normalClosure, reason: Data("done".utf8))
            let calls = try await delegate.ended()
            #expect(calls == ["open superchat", "close 1000 -", "complete nil"])
            #expect(task.closeCode == .normalClosure)
            #expect(task.state == .completed)
            #expect(task.error == nil)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 101)
            #expect(task.currentRequest?.value(forHTTPHeaderField: "Sec-WebSocket-Version") == "13")
            await #expect(throws: CourierError.self) { try await task.receive() }
        }
    }

    @Test("fragmented messages arrive whole; a server's Ping is answered, a client's Ping gets its Pong")
    func fragmentsAndPings() async throws {
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let fragmented = session.webSocketTask(with: Self.socketURL(server, "/ws/echo?fragments=7"))
            fragmented.resume()
            let message = String(repeating: "fragmént ", count: 5000)
            try await fragmented.send(.string(message))
            #expect(try await fragmented.receive() == .string(message))
            let pong = EventLog<String>()
            fragmented.sendPing { error in pong.append(error.map { "\($0)" } ?? "pong") }
            #expect(try await pong.wait { !$0.isEmpty } == ["pong"])
            fragmented.cancel(with: .goingAway, reason: nil)

            let pinged = session.webSocketTask(with: Self.socketURL(server, "/ws/echo?ping"))
            pinged.resume()
            #expect(try await pinged.receive() == .string("pong:hello?"))
            pinged.cancel(with: .normalClosure, reason: nil)
            _ = try await delegate.log.wait { $0.filter { $0.hasPrefix("complete") }.count == 2 }
        }
    }

    @Test("the server's Close: answered with its code; closeCode and closeReason are the server's; receives fail")
    func serverCloses() async throws {
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: Self.socketURL(server, "/ws/echo?close=1001"))
            task.resume()
            await #expect(throws: CourierError.self) { try await task.receive() }
            let calls = try await delegate.ended()
            #expect(calls == ["open -", "close 1001 bye", "complete nil"])
            #expect(task.closeCode == .goingAway)
            #expect(task.closeReason == Data("bye".utf8))
        }
    }

    @Test(
        "a connection dropped without a Close, and frames a server must not send, fail the task with a clear error",
        arguments: [
            ("drop", CourierError.Code.networkConnectionLost),
            ("bad=masked", .badServerResponse),
            ("bad=rsv", .badServerResponse),
            ("bad=utf8", .badServerResponse),
            ("bad=control", .badServerResponse),
        ]
    )
    func brokenConnections(query: String, code: CourierError.Code) async throws {
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: Self.socketURL(server, "/ws/echo?\(query)"))
            task.resume()
            do {
                let message = try await task.receive()
                Issue.record("received \(message)")
            } catch let error as CourierError {
                #expect(error.code == code, "\(error)")
            }
            let calls = try await delegate.ended()
            #expect(calls == ["open -", "complete \(code.rawValue)"])
            #expect(CourierError.Code.of(task.error) == code)
        }
    }

    @Test("a refused handshake, a wrong Sec-WebSocket-Accept, a subprotocol not offered: badServerResponse")
    func refusedHandshakes() async throws {
        // A server that answers 403 and keeps the connection, and one that switches with a wrong accept value.
        let refusing = try await RawServer.start(
            response: Data("HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\n\r\nno, no".utf8),
            closeAfter: false
        )
        let wrong = try await RawServer.start(
            response: Data(
                ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: AAAA\r\n\r\n").utf8
            ),
            closeAfter: false
        )
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let refused = session.webSocketTask(with: refusing.baseURL.appendingPathComponent("socket"))
            refused.resume()
            await #expect(throws: CourierError.self) { try await refused.receive() }
            let accepted = session.webSocketTask(with: wrong.baseURL.appendingPathComponent("socket"))
            accepted.resume()
            await #expect(throws: CourierError.self) { try await accepted.receive() }
            let bogusURL = Self.socketURL(server, "/ws/echo?protocol=bogus")
            let bogus = session.webSocketTask(with: bogusURL, protocols: ["chat"])
            bogus.resume()
            await #expect(throws: CourierError.self) { try await bogus.send(.string("never")) }
            let calls = try await delegate.log.wait { $0.filter { $0.hasPrefix("complete") }.count == 3 }
            #expect(calls == ["complete -1011", "complete -1011", "complete -1011"])
            #expect((refused.response as? HTTPURLResponse)?.statusCode == 403)
            #expect("\(refused.error.map { "\($0)" } ?? "")".contains("403"))
            #expect("\(accepted.error.map { "\($0)" } ?? "")".contains("Sec-WebSocket-Accept"))
        }
        try await refusing.shutdown()
        try await wrong.shutdown()
    }

    @Test("a message over maximumMessageSize closes with 1009 and fails with dataLengthExceedsMaximum")
    func messageTooBig() async throws {
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: Self.socketURL(server, "/ws/echo?flood=1&size=5000"))
            task.maximumMessageSize = 4096
            task.resume()
            await #expect(throws: CourierError.self) { try await task.receive() }
            _ = try await delegate.ended()
            #expect(CourierError.Code.of(task.error) == .dataLengthExceedsMaximum)
        }
    }

    @Test("a reader that stops: the task stops reading the socket; every message arrives intact once it reads again")
    func backpressure() async throws {
        try await withServer { server in
            let (session, delegate) = Self.session()
            defer { session.finishTasksAndInvalidate() }
            let count = 1500
            let size = 16 << 10
            let task = session.webSocketTask(with: Self.socketURL(server, "/ws/echo?flood=\(count)&size=\(size)"))
            task.resume()
            _ = try await delegate.log.wait { $0.contains { $0.hasPrefix("open") } }
            try await Task.sleep(for: .milliseconds(500))
            // 23 MiB were sent; the task holds its inbox's limit (4 MiB) and what one read brought on top.
            #expect(task.countOfBytesReceived < 12 << 20, "\(task.countOfBytesReceived >> 20) MiB read")
            for message in 0 ..< count {
                guard case .data(let data) = try await task.receive(), data.count == size,
                    data.first == UInt8(truncatingIfNeeded: message),
                    data.last == UInt8(truncatingIfNeeded: message + size - 1)
                else {
                    Issue.record("message \(message) is not as sent")
                    break
                }
            }
            #expect(try await task.receive() == .string("done"))
            task.cancel(with: .normalClosure, reason: nil)
            _ = try await delegate.ended()
        }
    }

    @Test("a thousand messages each way, sends awaited one by one, in order")
    func manyMessages() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: Self.socketURL(server, "/ws/echo"))
            task.resume()
            async let received: [WebSocketTask.Message] = {
                var messages: [WebSocketTask.Message] = []
                for _ in 0 ..< 1000 {
                    messages.append(try await task.receive())
                }
                return messages
            }()
            for index in 0 ..< 1000 {
                try await task.send(.string("message \(index)"))
            }
            let messages = try await received
            #expect(messages == (0 ..< 1000).map { .string("message \($0)") })
            task.cancel(with: .normalClosure, reason: nil)
        }
    }
}
