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

    init(status: Int, headerBlock: String) {
        self.status = status
        var version = "HTTP/1.1"
        var fields: [String: String] = [:]
        var lowerIndex: [String: String] = [:]
        var setCookies: [String] = []
        var isFirst = true
        for rawLine in headerBlock.split(
            omittingEmptySubsequences: true,
            whereSeparator: { $0 == "\n" || $0 == "\r\n" }
        ) {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            if line.isEmpty {
                continue
            }
            if line.hasPrefix("HTTP/") {
                // A status line: the block may hold more than one (interim responses); the last one counts.
                if let space = line.firstIndex(of: " ") {
                    version = String(line[..<space])
                }
                fields = [:]
                lowerIndex = [:]
                setCookies = []
                isFirst = false
                continue
            }
            if isFirst {
                isFirst = false
            }
            guard let colon = line.firstIndex(of: ":") else {
                continue
            }
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            let lower = name.lowercased()
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
