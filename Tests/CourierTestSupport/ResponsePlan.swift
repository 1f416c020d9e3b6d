import NIOCore
import NIOHTTP1

/// What a route answers, and how badly: the response, plus the faults the writer acts out on the wire.
struct ResponsePlan {
    /// Where the body bytes come from.
    enum Body {
        case empty
        case buffer(ByteBuffer)
        /// Bytes `offset ..< offset + count` of the `/bytes` stream for `seed`.
        case generated(seed: Int, offset: Int, count: Int)

        var count: Int {
            switch self {
            case .empty: return 0
            case .buffer(let buffer): return buffer.readableBytes
            case .generated(_, _, let count): return count
            }
        }

        /// `length` bytes starting `start` bytes into this body.
        func slice(from start: Int, length: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
            switch self {
            case .empty:
                return allocator.buffer(capacity: 0)
            case .buffer(let buffer):
                return buffer.getSlice(at: buffer.readerIndex + start, length: length) ?? allocator.buffer(capacity: 0)
            case .generated(let seed, let offset, _):
                return ByteGenerator.buffer(seed: seed, offset: offset + start, count: length, allocator: allocator)
            }
        }
    }

    /// Faults acted out while writing (see the routes table in docs/test-server.md).
    struct Faults {
        /// Wait before sending the head.
        var delay: TimeAmount?
        /// After the head, send nothing for this long.
        var stall: TimeAmount?
        /// Send the body `bytes` at a time, waiting `interval` between pieces.
        var trickle: (bytes: Int, interval: TimeAmount)?
        /// Close the connection (HTTP/2: reset the stream) after this many body bytes.
        var cut: Int?
        /// After this many body bytes, send nothing more: the response stays open until the client goes away (a
        /// transfer caught mid-way however late the client acts).
        var hold: Int?
        /// Abort the TCP connection with an RST (SO_LINGER 0) after this many body bytes.
        var reset: Int?
        /// HTTP/2: reset the stream with RST_STREAM and this error code after this many body bytes (HTTP/1: close).
        var streamReset: (after: Int, code: UInt32)?
        /// HTTP/2: after this many body bytes send GOAWAY naming the highest stream the server has seen as the
        /// last one it acts on, with this error code. NO_ERROR (0) is a graceful shutdown: the open streams end
        /// normally and the client opens no new one on the connection. Any other code closes the connection at
        /// once. HTTP/1: close.
        var goAway: (after: Int, code: UInt32)?
        /// Announce a Content-Length this much off the real length, then close.
        var lie: Int?
        /// Send no Content-Length (HTTP/1.1: chunked).
        var chunked = false
    }

    /// Something other than an HTTP response.
    enum Special {
        /// Raw bytes that are not HTTP on the connection, then close (HTTP/2: reset the stream).
        case garbage(ByteBuffer)
    }

    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: Body
    /// Informational (1xx) responses sent before the response, in order (`?early-hints=`).
    var informational: [HTTPResponseHead] = []
    var faults = Faults()
    var special: Special?

    init(status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders(), body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a UTF-8 body and its Content-Type.
    static func text(_ status: HTTPResponseStatus, _ text: String, contentType: String = "text/plain; charset=utf-8")
        -> ResponsePlan
    {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        return ResponsePlan(status: status, headers: headers, body: .buffer(ByteBuffer(string: text)))
    }

    /// A JSON response.
    static func json(_ value: JSONValue, status: HTTPResponseStatus = .ok) -> ResponsePlan {
        text(status, value.serialized(), contentType: "application/json")
    }

    /// A redirect to `location` with a small text body.
    static func redirect(_ status: HTTPResponseStatus, to location: String) -> ResponsePlan {
        var plan = text(status, "redirecting to \(location)\n")
        plan.headers.add(name: "Location", value: location)
        return plan
    }
}
