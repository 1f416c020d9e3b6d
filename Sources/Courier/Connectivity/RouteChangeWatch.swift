import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The tasks that wait for connectivity (`waitsForConnectivity`), each looked at again when the kernel announces a
/// change of links, addresses or routes: a netlink socket in those groups, open while any task waits, read on a
/// dispatch source. No timer looks in between; a waiting task's only timer is its deadline.
final class RouteChangeWatch: @unchecked Sendable {
    // Safe: `waiters`, `nextNumber` and `source` are read and written on `queue` only.
    static let shared = RouteChangeWatch()

    private struct Waiter {
        let url: URL?
        let ready: @Sendable () -> Void
    }

    private let queue = DispatchQueue(label: "courier.connectivity")
    private var waiters: [Int: Waiter] = [:]
    private var nextNumber = 0
    private var source: (any DispatchSourceRead)?

    /// Calls `ready` once, on the watch's queue, when ``Connectivity/isAvailable(for:)`` says `url` can be reached
    /// after a change of the routing table, or at `deadline`; at once when the kernel's changes cannot be watched
    /// (the task is not held back on a guess).
    func wait(for url: URL?, until deadline: Date?, ready: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            let number = nextNumber
            nextNumber += 1
            waiters[number] = Waiter(url: url, ready: ready)
            // Without the kernel's announcements, the task is not held back; with them, it looks once more itself (a
            // change between the caller's look and the subscription was not announced). The other waiters were
            // looked at when they came and hear every change since.
            guard source != nil || startWatching(), !Connectivity.isAvailable(for: url) else {
                finish(number)
                return
            }
            if let deadline {
                queue.asyncAfter(deadline: .now() + max(0, deadline.timeIntervalSinceNow)) { [self] in finish(number) }
            }
        }
    }

    private func finish(_ number: Int) {
        guard let waiter = waiters.removeValue(forKey: number) else {
            return
        }
        if waiters.isEmpty {
            source?.cancel()
            source = nil
        }
        waiter.ready()
    }

    private func lookAgain() {
        for (number, waiter) in waiters where Connectivity.isAvailable(for: waiter.url) {
            finish(number)
        }
    }

    /// Opens the netlink socket in the link, address and route groups (IPv4 and IPv6) and reads it on `queue`.
    private func startWatching() -> Bool {
        let descriptor = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Self.netlinkRoute)
        guard descriptor >= 0 else {
            return false
        }
        var address = NetlinkAddress(groups: Self.groups)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<NetlinkAddress>.size)) == 0
            }
        }
        guard bound else {
            close(descriptor)
            return false
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [self] in
            // The announcements themselves are not read: any change is a reason to look at the table again.
            // (ENOBUFS, when the kernel dropped some, is one too.)
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
            lookAgain()
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        self.source = source
        return true
    }

    /// `NETLINK_ROUTE` (linux/netlink.h).
    private static let netlinkRoute: Int32 = 0
    /// `RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_IFADDR | RTMGRP_IPV6_ROUTE`
    /// (linux/rtnetlink.h).
    private static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400

    /// `struct sockaddr_nl` (linux/netlink.h), which Glibc's module does not export: the same fields in order.
    private struct NetlinkAddress {
        var family = sa_family_t(AF_NETLINK)
        var padding: UInt16 = 0
        var port: UInt32 = 0
        var groups: UInt32
    }
}
