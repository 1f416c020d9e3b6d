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
