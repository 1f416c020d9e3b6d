public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A server on 127.0.0.1 that answers one request with a body that does not end (announced as `Content-Length`
/// 1 TiB), written with blocking writes on a thread of its own, at most `bytesPerSecond` when given: it counts what
/// the kernel took from it and notes when the client went away. A client that stops reading stops its writes within
/// the socket buffers; one that closes ends them. For tests of backpressure and cancellation, where what left the
/// server is the measure.
public final class EndlessBodyServer: @unchecked Sendable {
    // Safe: `listener` and `port` are set once; the counters are behind `lock`; the thread only reads `rate`.
    public let port: Int
    public var url: URL { URL(string: "http://127.0.0.1:\(port)/endless")! }

    private let listener: Int32
    private let rate: Int?
    private let lock = NSLock()
    private var written = 0
    private var closedAt: Date?
    private var connection: Int32 = -1
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    public init(bytesPerSecond: Int? = nil) throws {
        (listener, port) = try TCPSocket.listen(on: "127.0.0.1", backlog: 4)
        rate = bytesPerSecond
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// The body bytes the kernel took so far.
    public var bytesWritten: Int {
        lock.withLock { written }
    }

    /// When a write failed because the client closed the connection; nil while it is open.
    public var clientClosedAt: Date? {
        lock.withLock { closedAt }
    }

    /// Ends the server (a client that stopped reading no longer holds its thread) and waits for its thread.
    public func stop() {
        let descriptor = lock.withLock { () -> Int32 in
            stopped = true
            return connection
        }
        if descriptor >= 0 {
            shutdown(descriptor, Int32(SHUT_RDWR))
        }
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
    }

    private func serve() {
        defer { finished.signal() }
        let client = accept(listener, nil, nil)
        guard client >= 0 else {
            return
        }
        defer {
            // Forgotten before it is closed: `stop()` must never shut down a descriptor reused by another socket.
            lock.withLock { connection = -1 }
            close(client)
        }
        let proceed = lock.withLock { () -> Bool in
            connection = client
            return !stopped
        }
        guard proceed else {
            return
        }
        // The request head: read up to the blank line.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]), recv(client, &byte, 1, 0) == 1 {
            head.append(byte)
        }
        let response = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(1 << 40)\r\n\r\n"
        guard send(client, response, response.utf8.count, Int32(MSG_NOSIGNAL)) > 0 else {
            return
        }
        let block = [UInt8](repeating: 0x5A, count: 64 << 10)
        let began = Date()
        while true {
            if let rate {
                let due = Double(bytesWritten) / Double(rate) - Date().timeIntervalSince(began)
                if due > 0 {
                    usleep(useconds_t(min(due, 0.05) * 1e6))
                }
            }
            let sent = send(client, block, block.count, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR {
                continue
            }
            guard sent > 0 else {
                lock.withLock {
                    if !stopped {
                        closedAt = Date()
                    }
                }
                return
            }
            lock.withLock { written += sent }
        }
    }
}
