package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The few socket calls courierd and its clients make, on Unix stream sockets, with `errno` turned into
/// `DaemonSetupError` or a short reason.
package enum UnixSocket {
    /// A listening socket at `path` (mode 0600), replacing a stale socket file left by a daemon that died.
    package static func listen(at path: String) throws(DaemonSetupError) -> Int32 {
        unlink(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw .cannotCreate(path: path, reason: String(cString: strerror(errno)))
        }
        let bound = withAddress(path) { address, length in bind(descriptor, address, length) }
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(descriptor, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .cannotCreate(path: path, reason: reason)
        }
        return descriptor
    }

    /// A connection to the socket at `path`, or nil when nobody listens there.
    package static func connect(to path: String) -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return nil
        }
        let connected = withAddress(path) { address, length in Glibc.connect(descriptor, address, length) }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Writes all of `data`; false when the peer is gone.
    package static func write(_ data: Data, to descriptor: Int32) -> Bool {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if written < 0 && errno == EINTR {
                    continue
                }
                guard written > 0 else {
                    return false
                }
                offset += written
            }
            return true
        }
    }

    /// What one read without blocking found (``receiveAvailable(from:into:)``).
    package enum Received {
        /// This many bytes were read into the buffer; 0: the peer closed its side.
        case bytes(Int)
        /// Nothing to read yet.
        case nothingYet
        /// The connection failed, with this `errno`.
        case failed(Int32)
    }

    /// One `recv` into `buffer` without blocking (for a descriptor watched by a read source), retried when a signal
    /// interrupts it.
    package static func receiveAvailable(from descriptor: Int32, into buffer: inout [UInt8]) -> Received {
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count >= 0 {
                return .bytes(count)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .nothingYet
            default: return .failed(errno)
            }
        }
    }

    /// The next bytes from `descriptor` (up to 64 KiB); empty at end of stream or on an error.
    package static func read(from descriptor: Int32) -> Data {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR {
                continue
            }
            return count > 0 ? Data(buffer[0..<count]) : Data()
        }
    }

    /// True when the other end of a connected socket closed (`POLLHUP` or `POLLRDHUP`), without reading from it.
    package static func peerHungUp(_ descriptor: Int32) -> Bool {
        // POLLRDHUP (0x2000) is hidden by Glibc's module map (it needs _GNU_SOURCE).
        let readHangUp: Int16 = 0x2000
        var entry = pollfd(fd: descriptor, events: readHangUp, revents: 0)
        var ready = poll(&entry, 1, 0)
        while ready < 0 && errno == EINTR {
            ready = poll(&entry, 1, 0)
        }
        return ready == 1 && entry.revents & (Int16(POLLHUP) | readHangUp) != 0
    }

    /// The bytes written to a connected socket that its peer has not read yet (`SIOCOUTQ`); 0 when unknown.
    package static func unreadByPeer(_ descriptor: Int32) -> Int {
        // SIOCOUTQ is TIOCOUTQ (0x5411) on Linux; for a Unix stream socket it counts what the peer has not read.
        var count: Int32 = 0
        guard ioctl(descriptor, 0x5411, &count) == 0 else {
            return 0
        }
        return Int(count)
    }

    private static func withAddress<Result>(
        _ path: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(MemoryLayout.size(ofValue: address.sun_path) - 1)) + [0]
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
