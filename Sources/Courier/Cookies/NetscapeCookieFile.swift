import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Netscape cookie file format (curl's `-b`/`-c`, wget's `--load-cookies`, aria2's `--load-cookies`): one cookie a
/// line, seven tab-separated fields: domain, whether subdomains match (`TRUE`/`FALSE`), path, secure (`TRUE`/`FALSE`),
/// expiry (seconds since 1970; 0 for a session cookie), name, value. `#HttpOnly_` before the domain marks an
/// HttpOnly cookie; other lines starting with `#`, and blank ones, are comments.
enum NetscapeCookieFile {
    static let header = "# Netscape HTTP Cookie File\n# Written by Courier. Edit with care.\n\n"

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

    /// The file's text for `cookies`. A cookie with a tab or a line break in a field is left out: it would break the
    /// line into other fields or lines.
    static func text(of cookies: [HTTPCookie]) -> String {
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
            guard !fields.contains(where: { $0.contains("\t") || $0.contains("\n") || $0.contains("\r") }) else {
                continue
            }
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }
}
