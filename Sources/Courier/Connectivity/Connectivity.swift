import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Whether the system can reach a host, as the kernel's routing table says, for `waitsForConnectivity`: nothing is
/// sent. For an address, the route the kernel would pick for it (a UDP socket connected to it: a route lookup, no
/// packet); for a name, any route off the machine (IPv4 or IPv6, other than the loopback's), since the name cannot be
/// resolved without one.
enum Connectivity {
    /// How often a waiting task looks again.
    static let pollInterval: DispatchTimeInterval = .milliseconds(250)

    static func isAvailable(for url: URL?) -> Bool {
        guard let host = url?.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), !host.isEmpty else {
            return hasRouteOffMachine()
        }
        var ipv4 = in_addr()
        if inet_pton(AF_INET, host, &ipv4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(9).bigEndian)
            address.sin_addr = ipv4
            return routes(family: AF_INET, to: &address, length: MemoryLayout<sockaddr_in>.size)
        }
        var ipv6 = in6_addr()
        if inet_pton(AF_INET6, host, &ipv6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(9).bigEndian)
            address.sin6_addr = ipv6
            return routes(family: AF_INET6, to: &address, length: MemoryLayout<sockaddr_in6>.size)
        }
        return hasRouteOffMachine()
    }

    /// Calls `ready` once, on a global queue, when ``isAvailable(for:)`` becomes true, or at `deadline`.
    static func waitForRoute(to url: URL?, until deadline: Date?, _ ready: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + pollInterval) {
            if isAvailable(for: url) || deadline.map({ Date() >= $0 }) == true {
                ready()
            } else {
                waitForRoute(to: url, until: deadline, ready)
            }
        }
    }

    /// Whether the kernel has a route for a datagram to `address` (connect on a UDP socket sends nothing).
    private static func routes<Address>(family: Int32, to address: inout Address, length: Int) -> Bool {
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return true  // Cannot tell: do not hold the task back.
        }
        defer { close(descriptor) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(length)) }
        }
        return result == 0 || (errno != ENETUNREACH && errno != EHOSTUNREACH && errno != ENETDOWN)
    }

    /// Whether `/proc/net/route` or `/proc/net/ipv6_route` has a route through an interface other than `lo`.
    private static func hasRouteOffMachine() -> Bool {
        let ipv4 = (try? String(contentsOfFile: "/proc/net/route", encoding: .utf8)) ?? ""
        let ipv4Routes = ipv4.split(separator: "\n").dropFirst().contains { line in
            line.split(whereSeparator: \.isWhitespace).first.map { $0 != "lo" } ?? false
        }
        if ipv4Routes {
            return true
        }
        // Each line ends with the interface name; skip local and multicast routes the kernel keeps on every link.
        let ipv6 = (try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)) ?? ""
        return ipv6.split(separator: "\n").contains { line in
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard let device = fields.last, device != "lo", let destination = fields.first else {
                return false
            }
            return !destination.hasPrefix("fe80") && !destination.hasPrefix("ff")
        }
    }
}
