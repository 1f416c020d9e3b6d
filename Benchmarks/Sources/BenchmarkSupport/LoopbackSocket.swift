import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// TCP sockets on 127.0.0.1: the benchmarks' own servers, and the harness's free-port and readiness probes.
public enum LoopbackSocket {
    /// A socket bound to 127.0.0.1 on a port the kernel picks, listening with `backlog` unless it is nil.
    /// The caller owns (and closes) the descriptor.
    public static func bind(listenBacklog backlog: Int32?) throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                Glibc.bind(descriptor, socketAddress, length) == 0
                    && (backlog.map { listen(descriptor, $0) == 0 } ?? true)
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard ready else {
            let code = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// True when a connection to 127.0.0.1:`port` succeeds.
    public static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}
