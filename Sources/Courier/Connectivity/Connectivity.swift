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
    static func isAvailable(for url: URL?) -> Bool {
        guard let host = url?.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), !host.isEmpty else {
            return hasRouteOffMachine()
        }
        // An address (IPv4 or IPv6) parses without a lookup (AI_NUMERICHOST); a name does not.
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, "9", &hints, &found) == 0, let address = found else {
            return hasRouteOffMachine()
        }
        defer { freeaddrinfo(found) }
        return routes(to: address.pointee)
    }

    /// Calls `ready` once when ``isAvailable(for:)`` becomes true after a change of the routing table, or at
    /// `deadline` (``RouteChangeWatch``).
    static func waitForRoute(to url: URL?, until deadline: Date?, _ ready: @escaping @Sendable () -> Void) {
        RouteChangeWatch.shared.wait(for: url, until: deadline, ready: ready)
    }

    /// Whether the kernel has a route for a datagram to `address` (connect on a UDP socket sends nothing).
    private static func routes(to address: addrinfo) -> Bool {
        let descriptor = socket(address.ai_family, address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return true  // Cannot tell: do not hold the task back.
        }
        defer { close(descriptor) }
        let result = connect(descriptor, address.ai_addr, address.ai_addrlen)
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
