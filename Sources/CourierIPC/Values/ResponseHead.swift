package import Foundation

#if canImport(FoundationNetworking)
package import FoundationNetworking
#endif

/// A parsed response head: status line and header fields from the engine's raw header block. It crosses to and from
/// courierd as it is (every field line, repeated names apart and in order, and the HTTP version).
package struct ResponseHead: Codable, Sendable, Equatable {
    /// One header field line, as received.
    package struct Field: Codable, Sendable, Equatable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    package var status: Int
    package var httpVersion: String
    /// The header fields in the order they arrived, a repeated name once per line.
    package var fieldLines: [Field]

    package init(status: Int, httpVersion: String = "HTTP/1.1", fieldLines: [Field]) {
        self.status = status
        self.httpVersion = httpVersion
        self.fieldLines = fieldLines
    }

    /// A head from joined fields (in name order) and the `Set-Cookie` values (a `Set-Cookie` among `fields` is
    /// left out when `setCookies` is given).
    package init(
        status: Int,
        httpVersion: String = "HTTP/1.1",
        fields: [String: String] = [:],
        setCookies: [String] = []
    ) {
        var lines = fields.sorted { $0.key < $1.key }.compactMap { name, value in
            setCookies.isEmpty || !name.caseInsensitiveEquals("Set-Cookie") ? Field(name: name, value: value) : nil
        }
        lines += setCookies.map { Field(name: "Set-Cookie", value: $0) }
        self.init(status: status, httpVersion: httpVersion, fieldLines: lines)
    }

    /// Parses curl's raw header block: header lines, CRLF or LF separated. The block may hold more than one
    /// status line (interim responses); the fields after the last one count. Runs on the loop thread for every
    /// response, so it scans the bytes with integer offsets and makes one string per name and per value (a name
    /// of up to 15 bytes is a small string, with no allocation), in one array; invalid UTF-8 in a value is
    /// repaired (U+FFFD), as `String(decoding:as:)` does.
    package init(status: Int, headerBytes bytes: UnsafeRawBufferPointer) {
        self.status = status
        var version = "HTTP/1.1"
        var lines: [Field] = []
        var lineStart = 0
        while lineStart < bytes.count {
            let lineEnd = Self.first(UInt8(ascii: "\n"), in: lineStart..<bytes.count, of: bytes)
            let line = Self.trimmed(lineStart..<lineEnd, in: bytes)
            lineStart = lineEnd + 1
            if line.isEmpty {
                continue
            }
            if Self.startsWithHTTP(line, in: bytes) {
                let space = Self.first(UInt8(ascii: " "), in: line, of: bytes)
                version = Self.string(line.lowerBound..<space, in: bytes)
                lines.removeAll(keepingCapacity: true)
                // About one field per 24 bytes of what follows (nginx: 8 fields in 200 bytes): one allocation in
                // the usual case; a head of shorter lines grows the array.
                lines.reserveCapacity((bytes.count - lineStart) / 24 + 1)
                continue
            }
            let colon = Self.first(UInt8(ascii: ":"), in: line, of: bytes)
            let nameRange = Self.trimmed(line.lowerBound..<colon, in: bytes)
            guard colon < line.upperBound, !nameRange.isEmpty else {
                continue  // not a field: no colon, or no name
            }
            lines.append(
                Field(
                    name: Self.string(nameRange, in: bytes),
                    value: Self.string(Self.trimmed(colon + 1..<line.upperBound, in: bytes), in: bytes)
                )
            )
        }
        self.httpVersion = version
        self.fieldLines = lines
    }

    /// The offset of the first `byte` in `range`, or its upper bound.
    private static func first(_ byte: UInt8, in range: Range<Int>, of bytes: UnsafeRawBufferPointer) -> Int {
        var index = range.lowerBound
        while index < range.upperBound, bytes[index] != byte {
            index += 1
        }
        return index
    }

    /// `range` without leading and trailing spaces, tabs and carriage returns.
    private static func trimmed(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Range<Int> {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
        }
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, isSpace(bytes[lower]) {
            lower += 1
        }
        while upper > lower, isSpace(bytes[upper - 1]) {
            upper -= 1
        }
        return lower..<upper
    }

    private static func startsWithHTTP(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Bool {
        let prefix = "HTTP/".utf8
        return range.count >= prefix.count
            && zip(range, prefix).allSatisfy { index, byte in bytes[index] == byte }
    }

    private static func string(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// The values of the field `name` (case-insensitive), joined with ", " when it is repeated; nil when absent.
    package func value(_ name: String) -> String? {
        var joined: String?
        for field in fieldLines where field.name.caseInsensitiveEquals(name) {
            joined = joined.map { "\($0), \(field.value)" } ?? field.value
        }
        return joined
    }

    /// The entity's whole length a `Content-Range` gives (N of `bytes A-B/N` or `bytes */N`); nil when the field is
    /// absent or the length unknown (`*`).
    package var contentRangeTotal: Int64? {
        guard let range = value("Content-Range"), let slash = range.lastIndex(of: "/") else {
            return nil
        }
        return Int64(range[range.index(after: slash)...].trimmingCharacters(in: .whitespaces))
    }

    /// Each `Set-Cookie` value, in order.
    package var setCookies: [String] {
        fieldLines.compactMap { $0.name.caseInsensitiveEquals("Set-Cookie") ? $0.value : nil }
    }

    /// The fields with repeated names joined by ", " under the first spelling, as `HTTPURLResponse` holds them.
    package var fields: [String: String] {
        var fields: [String: String] = [:]
        fields.reserveCapacity(fieldLines.count)
        var spellings: [String] = []
        for field in fieldLines {
            if let first = spellings.first(where: { $0.caseInsensitiveEquals(field.name) }) {
                fields[first] = fields[first].map { "\($0), \(field.value)" } ?? field.value
            } else {
                spellings.append(field.name)
                fields[field.name] = field.value
            }
        }
        return fields
    }

    package func response(for url: URL) -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: status, httpVersion: httpVersion, headerFields: fields)
    }
}
