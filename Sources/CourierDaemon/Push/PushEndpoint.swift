package import Courier
package import Foundation
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// courierd's optional HTTP endpoint for pushes, shaped like APNs's provider API so that a server written for APNs can
/// be pointed at it in tests: `POST /3/device/<device token>` on 127.0.0.1, the JSON payload as the body, the
/// `apns-push-type` and `apns-priority` headers; answered `200` with an `apns-id` header, or an APNs status with
/// `{"reason": "…"}` (`BadDeviceToken`, `PayloadTooLarge`, `BadPath`, `MethodNotAllowed`, …).
///
/// HTTP/1.1 in clear text, one request per connection (`Connection: close`), bodies with a `Content-Length`. Only
/// connections from this user's processes are served (the peer's uid, looked up in `/proc/net/tcp`); others get
/// `403 Forbidden`. The port (given, or chosen by the kernel with 0) is written to `push-port` in the runtime
/// directory.
///
/// No thread waits on a client: connections are accepted by a read source on the listener, and each request is read
/// as it arrives (``PushRequestReader``), all on the endpoint's queue; a whole request is answered on a global queue
/// (the push is handed to courierd's apps, which may wait for the journal), and its connection closed.
///
/// `@unchecked Sendable`: every property is constant (the accept source is made in `init`, its handlers run on
/// `queue`).
package final class PushEndpoint: @unchecked Sendable {
    package let port: UInt16
    private let portFile: URL
    private let logger: Logger
    private let handle: @Sendable (IPCMessage.SendPush) -> IPCMessage.PushReceipt
    private let queue = DispatchQueue(label: "courierd.push-endpoint")
    private let accepting: any DispatchSourceRead

    package init(
        port: UInt16,
        portFile: URL,
        logger: Logger,
        handle: @escaping @Sendable (IPCMessage.SendPush) -> IPCMessage.PushReceipt
    ) throws(DaemonSetupError) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw .cannotCreate(path: "127.0.0.1:\(port)", reason: String(cString: strerror(errno)))
        }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0, named == 0, listen(descriptor, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .cannotCreate(path: "127.0.0.1:\(port)", reason: reason)
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        self.port = UInt16(bigEndian: address.sin_port)
        self.portFile = portFile
        self.logger = logger
        self.handle = handle
        accepting = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        accepting.setEventHandler { [weak self] in self?.acceptPending(on: descriptor) }
        accepting.setCancelHandler { close(descriptor) }
        try? Data("\(self.port)\n".utf8).write(to: portFile, options: .atomic)
        logger.info("push endpoint listening", metadata: ["address": "127.0.0.1:\(self.port)"])
        accepting.activate()
    }

    /// Stops accepting (the listener closes once its source is gone); requests being read or answered finish.
    package func stop() {
        accepting.cancel()
        try? FileManager.default.removeItem(at: portFile)
    }

    deinit {
        accepting.cancel()
    }

    /// Accepts every connection waiting, without blocking, and starts reading each one's request.
    private func acceptPending(on listener: Int32) {
        while true {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let descriptor = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            guard descriptor >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED:
                    continue
                case EMFILE, ENFILE:
                    // Out of descriptors: the connections wait in the backlog, and the source would wake again at
                    // once; accepting goes on a second later.
                    logger.error("push endpoint: no descriptor left to accept a connection; trying again in 1 s")
                    accepting.suspend()
                    queue.asyncAfter(deadline: .now() + 1) { [self] in accepting.resume() }
                    return
                default:
                    // EAGAIN: none left.
                    return
                }
            }
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            let peerPort = UInt16(bigEndian: peer.sin_port)
            PushRequestReader(descriptor: descriptor, queue: queue).start { [self] request in
                DispatchQueue.global().async { [self] in
                    serve(request, on: descriptor, peerPort: peerPort)
                    close(descriptor)
                }
            }
        }
    }

    /// Answers `request` (nil: none came whole, in time) on `descriptor`. The socket is non-blocking: an answer is a
    /// few hundred bytes, which a new connection's send buffer always takes.
    private func serve(_ request: PushRequestReader.Request?, on descriptor: Int32, peerPort: UInt16) {
        // The request was read before any answer: closing with a request unread would reset the connection.
        guard Self.owner(ofLoopbackPort: peerPort, connectedTo: port) == getuid() else {
            respond(descriptor, status: 403, reason: "Forbidden", detail: "only the user running courierd may push")
            return
        }
        guard let request else {
            respond(descriptor, status: 400, reason: "BadRequest", detail: "not an HTTP/1.1 request with a Content-Length body")
            return
        }
        guard request.head.method == "POST" else {
            respond(descriptor, status: 405, reason: "MethodNotAllowed", detail: "pushes are POSTed")
            return
        }
        let prefix = "/3/device/"
        guard request.head.path.hasPrefix(prefix) else {
            respond(descriptor, status: 404, reason: "BadPath", detail: "the path is /3/device/<device token>")
            return
        }
        var priority: Int?
        if let value = request.head.headers["apns-priority"] {
            guard let number = Int(value) else {
                respond(descriptor, status: 400, reason: "BadPriority", detail: "apns-priority is 5 or 10")
                return
            }
            priority = number
        }
        let push = IPCMessage.SendPush(
            request: 0,
            deviceToken: String(request.head.path.dropFirst(prefix.count)),
            payload: request.body,
            pushType: request.head.headers["apns-push-type"],
            priority: priority
        )
        let receipt = handle(push)
        if receipt.status == 200 {
            let id = request.head.headers["apns-id"] ?? receipt.id ?? UUID().uuidString
            write(descriptor, "HTTP/1.1 200 OK\r\napns-id: \(id)\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        } else {
            respond(descriptor, status: receipt.status, reason: receipt.reason ?? "BadRequest", detail: receipt.detail)
        }
    }

    private func respond(_ descriptor: Int32, status: Int, reason: String, detail: String?) {
        var object = ["reason": reason]
        object["detail"] = detail
        let body = (try? JSONSerialization.data(withJSONObject: object, options: .sortedKeys)) ?? Data()
        let phrases = [400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 413: "Payload Too Large"]
        let phrase = phrases[status] ?? "Error"
        write(
            descriptor,
            "HTTP/1.1 \(status) \(phrase)\r\ncontent-type: application/json\r\ncontent-length: \(body.count)\r\n"
                + "connection: close\r\n\r\n" + String(decoding: body, as: UTF8.self)
        )
        logger.notice("push refused", metadata: ["status": "\(status)", "reason": "\(reason)"])
    }

    private func write(_ descriptor: Int32, _ text: String) {
        _ = UnixSocket.write(Data(text.utf8), to: descriptor)
    }

    /// The uid owning the loopback TCP socket on `port` that is connected to `serverPort` (the peer of an accepted
    /// connection), from `/proc/net/tcp`; nil when not found.
    static func owner(ofLoopbackPort port: UInt16, connectedTo serverPort: UInt16) -> uid_t? {
        // Read to the end: procfs reports a size of 0, and a reader that trusts it stops after the first page.
        guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp"), let data = try? file.readToEnd() else {
            return nil
        }
        try? file.close()
        let table = String(decoding: data, as: UTF8.self)
        let local = String(format: "0100007F:%04X", port)
        let remote = String(format: "0100007F:%04X", serverPort)
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            if fields.count > 7, fields[1] == local, fields[2] == remote {
                return uid_t(fields[7])
            }
        }
        return nil
    }
}
