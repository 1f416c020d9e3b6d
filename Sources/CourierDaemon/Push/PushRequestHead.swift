package import Foundation

/// The head of one HTTP/1.1 request to courierd's push endpoint (APNs's `POST /3/device/<token>`), parsed from the
/// bytes before the blank line: the request line, then `name: value` fields (names lowercased; a repeated name keeps
/// the last value). Nil for anything else: no `HTTP/1.x` version, a line without a colon, a `Content-Length` that is
/// not a number from 0 to 1 MiB. Pure, so that the fuzzer reaches it (docs/reliability.md).
package struct PushRequestHead: Sendable, Equatable {
    package var method: String
    package var path: String
    /// Lowercased names.
    package var headers: [String: String]
    /// The body's length (0 without the field).
    package var contentLength: Int

    /// The longest body read: more than APNs accepts, so that a too-large payload is answered PayloadTooLarge.
    package static let maximumContentLength = 1 << 20

    package init?(_ bytes: Data) {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else {
            return nil
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else {
                return nil
            }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces
            )
        }
        let length = headers["content-length"].map { Int($0) } ?? 0
        guard let length, length >= 0, length <= Self.maximumContentLength else {
            return nil
        }
        method = String(requestLine[0])
        path = String(requestLine[1])
        self.headers = headers
        contentLength = length
    }
}
