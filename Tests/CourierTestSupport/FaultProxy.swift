import CourierConcurrency
public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay that misbehaves the way networks do (docs/reliability.md, "a network that goes away"): between a client
/// and the test server, on an IPv4 address of the test's own (127.0.0.1, or the host end of a veth pair), it adds
/// latency, throttles, stalls or resets the server-to-client direction of its first connections. Requests go through
/// untouched. One thread per direction per connection; `stop()` ends the listener (the relays end with their peers).
///
/// `@unchecked Sendable`: the listener descriptor and the fault are constants; the counters live in a `LockedValue`.
public final class FaultProxy: @unchecked Sendable {
    /// What happens to the bytes the server sends.
    public enum Fault: Sendable, CustomStringConvertible {
        /// Each chunk waits this long before it is passed on.
        case latency(milliseconds: Int)
        /// At most this many bytes a second.
        case throttle(bytesPerSecond: Int)
        /// After `after` bytes, nothing for `seconds` (the connection stays open), then the rest.
        case stall(after: Int, seconds: Double)
        /// After `after` bytes and a pause of 0.2 s, the connection is reset (RST: `SO_LINGER` 0 and close), both
        /// ways. The pause lets the client read what was passed: Linux discards a socket's unread bytes when the reset
        /// arrives, and a client that had not read the response head yet would have none (flaky: curl 55, no resume
        /// data, about one run in four).
        case reset(after: Int)

        public var description: String {
            switch self {
            case .latency(let milliseconds): "latency \(milliseconds) ms per chunk"
            case .throttle(let rate): "throttled to \(rate / 1024) KiB/s"
            case .stall(let after, let seconds): "stalled for \(seconds) s after \(after / 1024) KiB"
            case .reset(let after): "reset after \(after / 1024) KiB"
            }
        }
    }

    public let port: Int
    public let address: String
    private let upstreamAddress: String
    private let upstreamPort: Int
    private let listener: Int32
    private let fault: Fault
    private let faultyConnections: Int
    private struct Counters {
        var connections = 0
        var bytesToClient: Int64 = 0
        var stopping = false
    }
    private let scheme: String
    private let counters = LockedValue(Counters())

    /// Listens on `address` (a free port) and relays to `upstreamAddress`:`upstreamPort`; `fault` applies to the
    /// first `faultyConnections` connections (the ones after pass through untouched). `scheme` is the upstream's
    /// (`https`: the bytes relayed are TLS, and ``url(_:)`` says so).
    public init(
        address: String = "127.0.0.1",
        upstreamAddress: String = "127.0.0.1",
        upstreamPort: Int,
        scheme: String = "http",
        fault: Fault,
        faultyConnections: Int = 1
    ) throws {
        self.address = address
        self.scheme = scheme
        self.fault = fault
        self.faultyConnections = faultyConnections
        self.upstreamAddress = upstreamAddress
        self.upstreamPort = upstreamPort
        (listener, port) = try TCPSocket.listen(on: address)
        Thread.detachNewThread { [self] in
            self.acceptConnections()
        }
    }

    /// The connections accepted so far.
    public var connections: Int { counters.withLock { $0.connections } }

    /// Every byte passed from the server to clients (heads and bodies), over all connections.
    public var bytesToClients: Int64 { counters.withLock { $0.bytesToClient } }

    public func url(_ pathAndQuery: String) -> URL {
        URL(string: "\(scheme)://\(address):\(port)\(pathAndQuery)")!
    }

    public func stop() {
        counters.withLock { $0.stopping = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptConnections() {
        TCPSocket.acceptConnections(on: listener) { client in
            let (stopping, number) = counters.withLock { counters in
                counters.connections += 1
                return (counters.stopping, counters.connections)
            }
            guard !stopping else {
                close(client)
                return false
            }
            Thread.detachNewThread { [self] in
                self.relay(client, faulty: number <= faultyConnections)
            }
            return true
        }
    }

    private func relay(_ client: Int32, faulty: Bool) {
        let server = TCPSocket.connect(to: upstreamAddress, port: upstreamPort)
        guard server >= 0 else {
            close(client)
            return
        }
        // Requests: untouched. Each pump shuts down the other side's writing when its source ends.
        let requestsDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            TCPSocket.pump(from: client, to: server)
            requestsDone.signal()
        }
        let reset = pumpResponses(from: server, to: client, fault: faulty ? fault : nil)
        // The response direction decides the end. The request pump is woken (its read ends) and waited for before
        // the descriptors close, so that it never reads a reused one. A reset closes the client's with SO_LINGER 0:
        // an RST instead of a FIN.
        if reset {
            shutdown(client, Int32(SHUT_RD))
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        } else {
            shutdown(client, Int32(SHUT_RDWR))
        }
        shutdown(server, Int32(SHUT_RDWR))
        requestsDone.wait()
        close(client)
        close(server)
    }

    /// Passes the server's bytes on, with `fault`; true when it ended in a reset.
    private func pumpResponses(from server: Int32, to client: Int32, fault: Fault?) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16384)
        var passed = 0
        var stalled = false
        let started = Date()
        while true {
            let count = read(server, &buffer, buffer.count)
            guard count > 0 else {
                return false
            }
            var forward = count
            switch fault {
            case .latency(let milliseconds)?:
                usleep(UInt32(milliseconds) * 1000)
            case .throttle(let rate)?:
                let due = started.addingTimeInterval(Double(passed + count) / Double(rate))
                let wait = due.timeIntervalSinceNow
                if wait > 0 {
                    usleep(UInt32(wait * 1_000_000))
                }
            case .stall(let after, let seconds)? where !stalled && passed + count >= after:
                forward = after - passed
                stalled = true
                guard TCPSocket.writeAll(buffer, count: forward, to: client) else {
                    return false
                }
                counters.withLock { $0.bytesToClient += Int64(forward) }
                passed += forward
                usleep(UInt32(seconds * 1_000_000))
                guard TCPSocket.writeAll(buffer, from: forward, count: count - forward, to: client) else {
                    return false
                }
                counters.withLock { $0.bytesToClient += Int64(count - forward) }
                passed += count - forward
                continue
            case .reset(let after)? where passed + count >= after:
                _ = TCPSocket.writeAll(buffer, count: after - passed, to: client)
                counters.withLock { $0.bytesToClient += Int64(after - passed) }
                usleep(200_000)
                return true
            default:
                break
            }
            guard TCPSocket.writeAll(buffer, count: forward, to: client) else {
                return false
            }
            counters.withLock { $0.bytesToClient += Int64(forward) }
            passed += forward
        }
    }
}
