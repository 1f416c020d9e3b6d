import CourierConcurrency
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A SOCKS5 proxy (RFC 1928) on 127.0.0.1, with username/password authentication (RFC 1929) when given a credential:
/// it takes CONNECT to an IPv4 address or to a name, which it resolves itself from ``names`` only (a name a client
/// could not resolve shows the client left resolving to the proxy, as `socks5h` does), then relays both ways. One
/// thread per direction per connection.
///
/// `@unchecked Sendable`: the listener and the settings are constants; what it saw lives in a `LockedValue`.
public final class SOCKSProxy: @unchecked Sendable {
    /// What one client asked for.
    public struct Request: Sendable, Equatable {
        /// The name or address the client asked to reach, as it sent it.
        public var target: String
        public var port: Int
        /// The user it authenticated as; nil without authentication.
        public var user: String?
    }

    public let port: Int
    private let listener: Int32
    private let credential: (user: String, password: String)?
    private let names: [String: String]
    private let seen = LockedValue<[Request]>([])

    /// Listens on 127.0.0.1 at a free port. With `credential`, a client must authenticate with it; `names` are the
    /// host names it resolves (to dotted IPv4 addresses).
    public init(credential: (user: String, password: String)? = nil, names: [String: String] = [:]) throws {
        self.credential = credential
        self.names = names
        (listener, port) = try TCPSocket.listen(on: "127.0.0.1")
        Thread.detachNewThread { [self] in
            self.acceptConnections()
        }
    }

    /// Every CONNECT the proxy carried out, in order.
    public var requests: [Request] { seen.withLock { $0 } }

    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptConnections() {
        TCPSocket.acceptConnections(on: listener) { client in
            Thread.detachNewThread { [self] in
                self.serve(client)
            }
            return true
        }
    }

    private func serve(_ client: Int32) {
        guard let server = handshake(client) else {
            close(client)
            return
        }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            TCPSocket.pump(from: client, to: server)
            done.signal()
        }
        TCPSocket.pump(from: server, to: client)
        shutdown(client, Int32(SHUT_RDWR))
        done.wait()
        close(client)
        close(server)
    }

    /// The SOCKS exchange; the connected server socket, or nil (after the refusal the protocol sends).
    private func handshake(_ client: Int32) -> Int32? {
        guard let greeting = Self.read(client, 2), greeting[0] == 5, let methods = Self.read(client, Int(greeting[1]))
        else {
            return nil
        }
        var user: String?
        if let credential {
            guard methods.contains(2), Self.write(client, [5, 2]) else {
                _ = Self.write(client, [5, 0xff])
                return nil
            }
            guard let version = Self.read(client, 2), version[0] == 1,
                let name = Self.read(client, Int(version[1])), let length = Self.read(client, 1),
                let password = Self.read(client, Int(length[0]))
            else {
                return nil
            }
            let given = (String(decoding: name, as: UTF8.self), String(decoding: password, as: UTF8.self))
            guard given.0 == credential.user && given.1 == credential.password else {
                _ = Self.write(client, [1, 1])
                return nil
            }
            _ = Self.write(client, [1, 0])
            user = given.0
        } else {
            guard methods.contains(0), Self.write(client, [5, 0]) else {
                _ = Self.write(client, [5, 0xff])
                return nil
            }
        }
        guard let head = Self.read(client, 4), head[0] == 5, head[1] == 1 else {
            return nil
        }
        let target: String
        switch head[3] {
        case 1:
            guard let bytes = Self.read(client, 4) else { return nil }
            target = bytes.map(String.init).joined(separator: ".")
        case 3:
            guard let length = Self.read(client, 1), let bytes = Self.read(client, Int(length[0])) else { return nil }
            target = String(decoding: bytes, as: UTF8.self)
        default:
            _ = Self.write(client, [5, 8, 0, 1, 0, 0, 0, 0, 0, 0])
            return nil
        }
        guard let portBytes = Self.read(client, 2) else {
            return nil
        }
        let port = Int(portBytes[0]) << 8 | Int(portBytes[1])
        seen.withLock { $0.append(Request(target: target, port: port, user: user)) }
        let address = head[3] == 1 ? target : names[target.lowercased()]
        guard let address else {
            _ = Self.write(client, [5, 4, 0, 1, 0, 0, 0, 0, 0, 0])  // host unreachable
            return nil
        }
        let server = TCPSocket.connect(to: address, port: port)
        guard server >= 0 else {
            _ = Self.write(client, [5, 5, 0, 1, 0, 0, 0, 0, 0, 0])  // connection refused
            return nil
        }
        guard Self.write(client, [5, 0, 0, 1, 127, 0, 0, 1, 0, 0]) else {
            close(server)
            return nil
        }
        return server
    }

    private static func read(_ descriptor: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + filled, count - filled, 0) }
            guard got > 0 else {
                return nil
            }
            filled += got
        }
        return bytes
    }

    private static func write(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(descriptor, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }
}
