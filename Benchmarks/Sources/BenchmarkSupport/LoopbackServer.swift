import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 keep-alive server on 127.0.0.1 for the microbenchmarks and the queued-tasks measurement:
/// a thread per connection, `/small` answers 5 bytes, anything else 256 KiB. A stalled server never accepts, so
/// connections wait in the backlog.
public final class LoopbackServer: Sendable {
    public let port: Int
    private let listener: Int32
    private let connections = Mutex<[Int32]>([])

    private static let small = response(body: 5)
    private static let large = response(body: 256 << 10)

    public init(stalled: Bool) throws {
        (listener, port) = try LoopbackSocket.bind(listenBacklog: 128)
        if !stalled {
            Thread.detachNewThread { [self] in acceptLoop() }
        }
    }

    /// Closes the listener and every connection; their threads end on the next read.
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for connection in connections.withLock({ $0 }) {
            shutdown(connection, Int32(SHUT_RDWR))
        }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                return
            }
            connections.withLock { $0.append(connection) }
            Thread.detachNewThread { Self.serve(connection) }
        }
    }

    private static func serve(_ connection: Int32) {
        defer { close(connection) }
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var pending: [UInt8] = []
        while true {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else {
                return
            }
            pending.append(contentsOf: buffer[0..<count])
            // Answer every complete request head in what arrived (requests have no body here).
            while let end = headEnd(pending) {
                let isSmall = pending.starts(with: Array("GET /small".utf8))
                pending.removeFirst(end)
                let reply = isSmall ? small : large
                guard writeAll(connection, reply) else {
                    return
                }
            }
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else {
            return nil
        }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    private static func writeAll(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            guard written > 0 else {
                return false
            }
            offset += written
        }
        return true
    }

    private static func response(body: Int) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Length: \(body)\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
            + [UInt8](repeating: 0x61, count: body)
    }
}
