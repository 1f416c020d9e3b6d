import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A parsed response head: status line and header fields from the engine's raw header block.
struct ResponseHead: Sendable {
    var status: Int
    var httpVersion: String
    /// Header fields with repeated names joined by ", " (`Set-Cookie` is kept apart in ``setCookies``).
    var fields: [String: String]
    /// Each `Set-Cookie` value, in order.
    var setCookies: [String]

    /// Parses `headerBlock` (curl's raw header lines, CRLF or LF separated). The block may hold more than one
    /// status line (interim responses); the fields after the last one count. Runs on the loop thread for every
    /// response, so it scans UTF-8 bytes instead of going through Foundation's string trimming.
    init(status: Int, headerBlock: String) {
        self.status = status
        var version = "HTTP/1.1"
        var fields: [String: String] = [:]
        var lowerIndex: [String: String] = [:]
        var setCookies: [String] = []
        let bytes = headerBlock.utf8
        var lineStart = bytes.startIndex
        while lineStart < bytes.endIndex {
            let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            defer { lineStart = lineEnd < bytes.endIndex ? bytes.index(after: lineEnd) : lineEnd }
            let line = Self.trimmed(bytes[lineStart..<lineEnd])
            if line.isEmpty {
                continue
            }
            if line.starts(with: "HTTP/".utf8) {
                let space = line.firstIndex(of: UInt8(ascii: " ")) ?? line.endIndex
                version = String(Substring(line[..<space]))
                fields = [:]
                lowerIndex = [:]
                setCookies = []
                continue
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                continue
            }
            let nameBytes = Self.trimmed(line[..<colon])
            let name = String(Substring(nameBytes))
            let value = String(Substring(Self.trimmed(line[line.index(after: colon)...])))
            let lower = Self.asciiLowercased(nameBytes)
            if lower == "set-cookie" {
                setCookies.append(value)
            }
            if let existing = lowerIndex[lower] {
                fields[existing] = fields[existing].map { "\($0), \(value)" } ?? value
            } else {
                lowerIndex[lower] = name
                fields[name] = value
            }
        }
        self.httpVersion = version
        self.fields = fields
        self.setCookies = setCookies
    }

    /// `bytes` without leading and trailing spaces, tabs and carriage returns.
    private static func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
        }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else {
            return bytes[bytes.endIndex...]
        }
        return bytes[first...last]
    }

    /// Field names are tokens (RFC 9110): ASCII. Lowercases bytes without Unicode case mapping; names of up to
    /// 15 bytes stay small strings, with no allocation.
    private static func asciiLowercased(_ bytes: Substring.UTF8View) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { buffer in
            var count = 0
            for byte in bytes {
                buffer[count] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
                count += 1
            }
            return count
        }
    }

    /// A header value by case-insensitive name.
    func value(_ name: String) -> String? {
        if let direct = fields[name] {
            return direct
        }
        let lower = name.lowercased()
        return fields.first { $0.key.lowercased() == lower }?.value
    }

    func response(for url: URL) -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: status, httpVersion: httpVersion, headerFields: fields)
    }
}
