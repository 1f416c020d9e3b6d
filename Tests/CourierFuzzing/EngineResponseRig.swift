import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The `engine-response` fuzz target's two ends: a server on 127.0.0.1 that answers one request with exactly the
/// bytes it is given and closes, and a session whose data task asks it. What a hostile server can send (status
/// lines, fields, chunked framing, content codings, early ends) goes through the real engine, its decoder and the
/// task layer; the target checks only that each task ends (exactly once, through its completion handler) without a
/// crash, a hang or a leak. Redirects are refused (the fuzzer must reach no other address) and the request says
/// `Connection: close`, so every input gets a connection of its own.
final class EngineResponseRig: @unchecked Sendable {
    // Safe: every property is set once in init; each run is one at a time (libFuzzer's loop, or the test's).
    static let shared = EngineResponseRig()

    private let listener: Int32
    private let url: URL
    private let session: Session

    /// Refuses every redirect: the 3xx is the final response.
    private final class NoRedirects: SessionTaskDelegate, Sendable {
        func urlSession(
            _ session: Session,
            task: SessionTask,
            willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest,
            completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }

    private init() {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        listener = descriptor
        guard descriptor >= 0, bound, listen(descriptor, 16) == 0 else {
            fatalError("engine-response: cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/fuzz")!
        var configuration = SessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 5
        configuration.timeoutIntervalForResource = 10
        configuration.connectionProxyDictionary = [:]
        configuration.urlCache = nil
        configuration.httpAdditionalHeaders = ["Connection": "close"]
        session = Session(configuration: configuration, delegate: NoRedirects())
    }

    /// One exchange: the request is read, `response` written, the connection closed; returns when the task ended.
    func run(_ response: Data) {
        let served = DispatchSemaphore(value: 0)
        let listener = listener
        Thread.detachNewThread {
            defer { served.signal() }
            var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 10_000) == 1 else {
                return
            }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                return
            }
            defer { close(connection) }
            Self.readRequestHead(connection)
            response.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let sent = send(connection, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    guard sent > 0 else {
                        return
                    }
                    offset += sent
                }
            }
        }
        let ended = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: url) { _, _, _ in ended.signal() }
        task.resume()
        guard ended.wait(timeout: .now() + 30) == .success else {
            fatalError("engine-response: the task did not end within 30 s")
        }
        served.wait()
    }

    /// Reads up to the blank line that ends the request's head (at most 64 KiB).
    private static func readRequestHead(_ connection: Int32) {
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < 65_536 {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else {
                return
            }
            head += buffer[0..<count]
            if head.firstRange(of: [13, 10, 13, 10]) != nil {
                return
            }
        }
    }
}
