import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Netscape cookie file format (curl's `-b`/`-c`, wget's `--load-cookies`, aria2's `--load-cookies`): one cookie a
/// line, seven tab-separated fields: domain, whether subdomains match (`TRUE`/`FALSE`), path, secure (`TRUE`/`FALSE`),
/// expiry (seconds since 1970; 0 for a session cookie), name, value. `#HttpOnly_` before the domain marks an
/// HttpOnly cookie; other lines starting with `#`, and blank ones, are comments.
///
/// As a jar's file (``CookieStorage/init(persistingTo:)``): saves are written in order on a serial queue, each with the
/// jar as it is when it runs.
final class NetscapeCookieFile: Sendable {
    let url: URL
    private let queue = DispatchQueue(label: "courier.cookie-file")

    init(_ url: URL) {
        self.url = url
    }

    /// Writes `storage`'s cookies soon (after the change that asked, and any before it).
    func save(_ storage: CookieStorage) {
        queue.async { [url] in
            try? NetscapeCookieFile.write(storage.cookies, to: url)
        }
    }

    /// Waits for the saves asked for so far.
    func flush() {
        queue.sync {}
    }

    static let header = "# Netscape HTTP Cookie File\n# Written by Courier. Edit with care.\n\n"

    static func read(_ url: URL, missingIsEmpty: Bool) throws -> [HTTPCookie] {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch CocoaError.fileReadNoSuchFile where missingIsEmpty {
            return []
        }
        return cookies(in: text)
    }

    static func cookies(in text: String) -> [HTTPCookie] {
        text.split(whereSeparator: \.isNewline).compactMap { cookie(line: String($0)) }
    }

    private static func cookie(line: String) -> HTTPCookie? {
        var line = line
        var httpOnly = false
        if line.hasPrefix("#HttpOnly_") {
            httpOnly = true
            line.removeFirst("#HttpOnly_".count)
        } else if line.hasPrefix("#") {
            return nil
        }
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 7, !fields[0].isEmpty, !fields[5].isEmpty, let expiry = Int64(fields[4]) else {
            return nil
        }
        var domain = fields[0]
        if fields[1].uppercased() == "TRUE" && !domain.hasPrefix(".") {
            domain = "." + domain
        }
        var properties: [HTTPCookiePropertyKey: Any] = [
            .domain: domain,
            .path: fields[2].isEmpty ? "/" : fields[2],
            .name: fields[5],
            .value: fields[6],
        ]
        if fields[3].uppercased() == "TRUE" {
            properties[.secure] = "TRUE"
        }
        if expiry > 0 {
            properties[.expires] = Date(timeIntervalSince1970: TimeInterval(expiry))
        } else {
            properties[.discard] = "TRUE"
        }
        if httpOnly {
            properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE"
        }
        return HTTPCookie(properties: properties)
    }

    static func write(_ cookies: [HTTPCookie], to url: URL) throws {
        var text = header
        for cookie in cookies.sorted(by: { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }) {
            let expiry = cookie.expiresDate.map { Int64($0.timeIntervalSince1970) } ?? 0
            let subdomains = cookie.domain.hasPrefix(".")
            let fields = [
                (cookie.isHTTPOnly ? "#HttpOnly_" : "") + cookie.domain,
                subdomains ? "TRUE" : "FALSE",
                cookie.path,
                cookie.isSecure ? "TRUE" : "FALSE",
                String(expiry),
                cookie.name,
                cookie.value,
            ]
            // A tab or a line break inside a field would break the line into other fields or lines.
            guard !fields.contains(where: { $0.contains("\t") || $0.contains("\n") || $0.contains("\r") }) else {
                continue
            }
            text += fields.joined(separator: "\t") + "\n"
        }
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: 0o600])
        else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }
}
