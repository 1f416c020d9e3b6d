import CourierConcurrency
import Foundation

/// A network of the test's own (docs/test-server.md): a network namespace joined to this one by a veth pair
/// (iproute2), 10.231.N.1 on this side (``hostAddress``), 10.231.N.2 inside (``insideAddress``); the inside end
/// starts down (``link(up:)``). A server listens on the host address; a client (courierd, a probe) runs inside with
/// ``command(_:)``. The test takes the link down, or removes the route, and brings them back. Needs root and `ip`;
/// ``remove()`` deletes both ends and the namespace.
public struct VethNetwork: Sendable {
    public let name: String
    public let hostSide: String
    public let inside: String
    public let hostAddress: String
    public let insideAddress: String
    private let subnet: String

    /// Whether this process can make one (root, and iproute2 installed).
    public static var canMake: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")
    }

    public init() throws {
        let tag = String(UInt32.random(in: 0..<0xFFFF_FFFF), radix: 36)
        name = "courier-net-\(tag)"
        hostSide = "cvh\(tag)".prefix(15).description
        inside = "cvn\(tag)".prefix(15).description
        // A subnet no other network of this process, nor any address of the host, is on (two networks of parallel
        // tests on one /24 would route each other's packets).
        let taken = (try? Self.ip(["-4", "addr", "show"])) ?? ""
        let number = Self.subnets.withLock { used in
            let free = (1..<250).filter { !used.contains($0) && !taken.contains("10.231.\($0).") }
            let chosen = free.randomElement() ?? Int.random(in: 1..<250)
            used.insert(chosen)
            return chosen
        }
        subnet = "10.231.\(number).0/24"
        hostAddress = "10.231.\(number).1"
        insideAddress = "10.231.\(number).2"
        try Self.ip(["netns", "add", name])
        try Self.ip(["link", "add", hostSide, "type", "veth", "peer", "name", inside])
        try Self.ip(["link", "set", inside, "netns", name])
        try Self.ip(["addr", "add", "\(hostAddress)/24", "dev", hostSide])
        try Self.ip(["link", "set", hostSide, "up"])
        try Self.ip(["netns", "exec", name, "ip", "addr", "add", "\(insideAddress)/24", "dev", inside])
        try Self.ip(["netns", "exec", name, "ip", "link", "set", "lo", "up"])
    }

    /// The namespace's link up (a route to the host side) or down (none: connects fail at once, established
    /// connections stall).
    public func link(up: Bool) throws {
        try Self.ip(["netns", "exec", name, "ip", "link", "set", inside, up ? "up" : "down"])
    }

    /// The namespace's route to the host side present or gone, the link staying up (sends fail with
    /// `ENETUNREACH`).
    public func route(present: Bool) throws {
        try Self.ip(["netns", "exec", name, "ip", "route", present ? "add" : "del", subnet, "dev", inside])
    }

    /// `ip` arguments that run `command` inside the namespace (`ip netns exec` execs it: same pid).
    public func command(_ command: [String]) -> [String] {
        ["netns", "exec", name] + command
    }

    public func remove() {
        _ = try? Self.ip(["link", "delete", hostSide])
        _ = try? Self.ip(["netns", "delete", name])
        let number = Int(hostAddress.split(separator: ".")[2]) ?? 0
        _ = Self.subnets.withLock { $0.remove(number) }
    }

    /// The subnets (N of 10.231.N.0/24) this process's networks are on.
    private static let subnets = LockedValue<Set<Int>>([])

    @discardableResult
    public static func ip(_ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(
            "/usr/sbin/ip",
            arguments: arguments,
            environment: ProcessInfo.processInfo.environment,
            timeout: .seconds(20)
        )
        guard result.termination == .exited(0) else {
            throw POSIXError(.EIO)
        }
        return String(decoding: result.standardOutput, as: UTF8.self)
    }
}
