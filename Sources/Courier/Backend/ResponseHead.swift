import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A parsed response head: status line and header fields from the engine's raw header block.
struct ResponseHead: Codable, Sendable, Equatable {
    var status: Int
    var httpVersion: String
    /// Header fields with repeated names joined by ", " (`Set-Cookie` is kept apart in ``setCookies``).
    var fields: [String: String]
    /// Each `Set-Cookie` value, in order.
    var setCookies: [String]

    init(status: Int, httpVersion: String = "HTTP/1.1", fields: [String: String] = [:], setCookies: [String] = []) {
        self.status = status
        self.httpVersion = httpVersion
        self.fields = fields
        self.setCookies = setCookies
    }

    /// Parses curl's raw header block: header lines, CRLF or LF separated. The block may hold more than one
    /// status line (interim responses); the fields after the last one count. Runs on the loop thread for every
    /// response, so it scans the bytes with integer offsets and makes one string per name and per value;
    /// invalid UTF-8 in a value is repaired (U+FFFD), as `String(decoding:as:)` does.
    init(status: Int, headerBytes bytes: UnsafeRawBufferPointer) {
        self.status = status
        var version = "HTTP/1.1"
        var fields: [String: String] = [:]
        var lowerIndex: [String: String] = [:]
        var setCookies: [String] = []
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
                fields = [:]
                lowerIndex = [:]
                setCookies = []
                continue
            }
            let colon = Self.first(UInt8(ascii: ":"), in: line, of: bytes)
            let nameRange = Self.trimmed(line.lowerBound..<colon, in: bytes)
            guard colon < line.upperBound, !nameRange.isEmpty else {
                continue  // not a field: no colon, or no name
            }
            let name = Self.string(nameRange, in: bytes)
            let value = Self.string(Self.trimmed(colon + 1..<line.upperBound, in: bytes), in: bytes)
            let lower = Self.asciiLowercased(nameRange, in: bytes)
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

    /// Field names are tokens (RFC 9110): ASCII. Lowercases bytes without Unicode case mapping; names of up to
    /// 15 bytes stay small strings, with no allocation.
    private static func asciiLowercased(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: range.count) { buffer in
            for (offset, index) in range.enumerated() {
                let byte = bytes[index]
                buffer[offset] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
            }
            return range.count
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
