import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The plain IPv4 TCP sockets of the test's relays (``FaultProxy``, the kill harness's counting proxy): a listener on
/// a free port, a connection to an address. Descriptors are close-on-exec.
public enum TCPSocket {
    /// A socket listening on `address` (dotted IPv4) at a free port; throws `EADDRINUSE` when it cannot bind.
    public static func listen(on address: String, backlog: Int32 = 128) throws -> (descriptor: Int32, port: Int) {
        var local = try socketAddress(address, port: 0)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw POSIXError(.EMFILE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound, Glibc.listen(descriptor, backlog) == 0 else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        return (descriptor, Int(UInt16(bigEndian: local.sin_port)))
    }

    /// A socket connected to `address`:`port`, or -1.
    public static func connect(to address: String, port: Int) -> Int32 {
        guard var remote = try? socketAddress(address, port: port) else {
            return -1
        }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return -1
        }
        let connected = withUnsafePointer(to: &remote) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(descriptor)
            return -1
        }
        return descriptor
    }

    /// Accepts connections on `listener` until it is shut down (or `accept` fails otherwise), handing each one,
    /// close-on-exec, to `handle`, which takes it over; `handle` returns false to stop accepting. Closes the listener
    /// at the end. Blocks: run it on a thread of its own.
    public static func acceptConnections(on listener: Int32, _ handle: (Int32) -> Bool) {
        defer { close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED {
                    continue
                }
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            guard handle(client) else {
                return
            }
        }
    }

    /// Copies what `source` reads to `destination` until `source` ends or `destination` fails, then shuts down the
    /// writing side of `destination` (its peer sees the end). Blocks.
    public static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0, writeAll(buffer, count: count, to: destination) else {
                shutdown(destination, Int32(SHUT_WR))
                return
            }
        }
    }

    /// Sends bytes `start ..< start + count` of `buffer`; false when the peer is gone.
    public static func writeAll(_ buffer: [UInt8], from start: Int = 0, count: Int, to destination: Int32) -> Bool {
        var offset = start
        while offset < start + count {
            let written = buffer.withUnsafeBytes {
                send(destination, $0.baseAddress! + offset, start + count - offset, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else {
                return false
            }
            offset += written
        }
        return true
    }

    private static func socketAddress(_ text: String, port: Int) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, text, &address.sin_addr) == 1 else {
            throw POSIXError(.EINVAL)
        }
        return address
    }
}
