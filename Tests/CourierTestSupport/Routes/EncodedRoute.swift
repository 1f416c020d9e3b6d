import CTestCompression
public import Foundation
import NIOCore
import NIOHTTP1

/// `GET/HEAD /encoded/CODING/N`: the first N bytes of ``TestServer/text(count:)`` with that content coding.
/// `corrupt=1` flips 8 bytes a third of the way in; `label=X` sends `Content-Encoding: X` instead of CODING;
/// `status=CODE`; and the wire faults of `/bytes`.
enum EncodedRoute {
    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        guard request.head.method == .GET || request.head.method == .HEAD else {
            return Router.methodNotAllowed(request, allowed: "GET, HEAD")
        }
        let coding = request.pathSegments[1]
        guard let count = Int(request.pathSegments[2]), count >= 0 else {
            return Router.badRequest("/encoded/CODING/N needs a non-negative integer N")
        }
        guard var body = TestServer.encode(TestServer.text(count: count), coding: coding) else {
            return Router.badRequest("coding must be identity, gzip, deflate, br or zstd")
        }
        if request.queryFlag("corrupt") && body.count > 0 {
            // Past any header, inside the compressed data (and before a gzip trailer's CRC).
            let start = body.count / 3
            for index in start..<min(body.count, start + 8) {
                body[index] ^= 0x5A
            }
        }
        let status = request.queryInt("status").map { HTTPResponseStatus(statusCode: $0) } ?? .ok
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        if let label = request.queryValue("label") {
            headers.add(name: "Content-Encoding", value: label)
        } else if coding != "identity" {
            headers.add(name: "Content-Encoding", value: coding)
        }
        headers.add(name: "ETag", value: "\"encoded-\(coding)-\(count)\"")
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "Vary", value: "Accept-Encoding")
        var plan = ResponsePlan(status: status, headers: headers, body: .buffer(ByteBuffer(bytes: body)))
        plan.faults = BytesRoute.faults(request)
        return plan
    }
}

extension TestServer {
    /// `count` bytes of compressible UTF-8 text, the same for the same count (a shorter count gives a prefix).
    public static func text(count: Int) -> Data {
        var text = Data()
        text.reserveCapacity(max(0, count) + 64)
        var line = 0
        while text.count < count {
            text.append(contentsOf: "line \(line) of the text Courier decodes from every content coding\n".utf8)
            line += 1
        }
        return text.prefix(max(0, count))
    }

    /// `data` encoded with `coding` ("identity", "gzip", "deflate", "br" or "zstd") by the system's encoders, as
    /// `/encoded` serves it; nil for another coding.
    public static func encode(_ data: Data, coding: String) -> Data? {
        if coding == "identity" {
            return data
        }
        var length = 0
        let encoded = data.withUnsafeBytes { input in
            ctc_encode(coding, input.baseAddress, input.count, &length)
        }
        guard let encoded else {
            return nil
        }
        return Data(bytesNoCopy: encoded, count: length, deallocator: .free)
    }

    /// `block` repeated `repeats` times, gzip-encoded at `level` as it streams (the decoded body is never in memory):
    /// a body of gigabytes in a few megabytes.
    public static func gzip(repeating block: Data, times repeats: Int, level: Int32 = 1) -> Data {
        var length = 0
        let encoded = block.withUnsafeBytes { input in
            ctc_gzip_repeated(input.baseAddress, input.count, repeats, level, &length)
        }
        guard let encoded else {
            fatalError("out of memory encoding a test body")
        }
        return Data(bytesNoCopy: encoded, count: length, deallocator: .free)
    }
}
