import CourierConcurrency
public import Foundation

/// HTTP Strict Transport Security (RFC 6797): the hosts that said, over HTTPS, to be reached over HTTPS only. A
/// session upgrades each `http` request to such a host to `https` before anything is sent (the port too, when it is
/// the default one). In memory, or kept in a file in curl's HSTS cache format (`curl --hsts FILE` reads and writes the
/// same), written atomically after each change.
///
/// ``SessionConfiguration/default`` uses ``shared``, kept in `$XDG_STATE_HOME/courier/hsts.txt` (else
/// `~/.local/state/courier/hsts.txt`), created when a first host is recorded; each ``SessionConfiguration/ephemeral``
/// configuration gets a private one in memory (as Apple keeps HSTS for its default and ephemeral sessions).
/// Thread-safe.
public final class HSTSStorage: Sendable {
    struct Entry: Sendable, Equatable {
        var includesSubdomains: Bool
        /// nil: no expiry.
        var expires: Date?
    }

    /// The process-wide store of `.default` configurations, persisted.
    public static let shared: HSTSStorage =
        (try? HSTSStorage(file: .inStateDirectory("hsts.txt"))) ?? HSTSStorage()

    private let hosts = LockedValue<[String: Entry]>([:])
    private let file: KeptFile?

    /// An empty store in memory.
    public init() {
        file = nil
    }

    /// A store kept in the file at `url` (curl's HSTS cache format), read now (a missing file is an empty store).
    /// Throws when the file exists and cannot be read.
    public convenience init(persistingTo url: URL) throws {
        try self.init(file: KeptFile(url, makesDirectory: true))
    }

    private init(file: KeptFile) throws {
        self.file = file
        guard let text = try file.read() else {
            return
        }
        let now = Date()
        hosts.withLock { table in
            for (host, entry) in Self.entries(in: text) where entry.expires.map({ $0 > now }) ?? true {
                table[host] = entry
            }
        }
    }

    /// Whether requests to `host` go over HTTPS only.
    public func isKnown(_ host: String) -> Bool {
        entry(for: host) != nil
    }

    /// Forgets every host.
    public func removeAll() {
        hosts.withLock { $0.removeAll() }
        save()
    }

    /// Returns once the store's file holds every change made before the call.
    public func synchronize() {
        file?.flush()
    }

    /// `url` as it goes on the wire: `https` for a known host (port 80 becomes 443); `url` itself otherwise.
    func upgrade(_ url: URL) -> URL {
        // Most stores are empty: a look at the table before any string of the URL is made.
        guard !hosts.withLock({ $0.isEmpty }), url.scheme?.lowercased() == "http", let host = url.host,
            entry(for: host) != nil,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else {
            return url
        }
        components.scheme = "https"
        if components.port == 80 {
            components.port = nil
        }
        return components.url ?? url
    }

    /// Records the `Strict-Transport-Security` field of a response from `url` (HTTPS, a host name: never from
    /// plain http, nor for an IP address). `max-age=0` forgets the host.
    func observe(_ field: String, from url: URL) {
        guard url.scheme?.lowercased() == "https", let host = url.host?.lowercased(), !host.isEmpty,
            !Self.isAddress(host), let policy = Self.policy(field)
        else {
            return
        }
        hosts.withLock { table in
            if policy.maxAge <= 0 {
                table[host] = nil
            } else {
                table[host] = Entry(
                    includesSubdomains: policy.includesSubdomains,
                    expires: Date().addingTimeInterval(policy.maxAge)
                )
            }
        }
        save()
    }

    private func entry(for host: String) -> Entry? {
        let host = host.lowercased()
        guard !Self.isAddress(host) else {
            return nil
        }
        let now = Date()
        return hosts.withLock { table in
            if let exact = table[host], exact.expires.map({ $0 > now }) ?? true {
                return exact
            }
            var labels = host.split(separator: ".")[...]
            while labels.count > 1 {
                labels.removeFirst()
                if let parent = table[labels.joined(separator: ".")], parent.includesSubdomains,
                    parent.expires.map({ $0 > now }) ?? true
                {
                    return parent
                }
            }
            return nil
        }
    }

    // MARK: The field and the file

    /// `max-age` (seconds) and `includeSubDomains` of a field value; nil without a valid `max-age`.
    static func policy(_ field: String) -> (maxAge: TimeInterval, includesSubdomains: Bool)? {
        var maxAge: TimeInterval?
        var subdomains = false
        for directive in field.split(separator: ";") {
            let parts = directive.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            switch parts.first?.lowercased() {
            case "max-age":
                guard parts.count == 2, let seconds = TimeInterval(parts[1]), seconds >= 0 else {
                    return nil
                }
                maxAge = seconds
            case "includesubdomains":
                subdomains = true
            default:
                continue
            }
        }
        return maxAge.map { ($0, subdomains) }
    }

    private static func isAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").allSatisfy { Int($0) != nil }
    }

    /// `YYYYMMDD HH:MM:SS`, UTC (curl's form).
    private static func text(of date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02d %02d:%02d:%02d",
            parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec
        )
    }

    private static func date(of text: String) -> Date? {
        let digits = text.filter(\.isNumber).compactMap(\.wholeNumberValue)
        guard digits.count == 14, text.count == 17 else {
            return nil
        }
        func number(_ range: Range<Int>) -> Int32 {
            Int32(digits[range].reduce(0) { $0 * 10 + $1 })
        }
        var parts = tm()
        parts.tm_year = number(0..<4) - 1900
        parts.tm_mon = number(4..<6) - 1
        parts.tm_mday = number(6..<8)
        parts.tm_hour = number(8..<10)
        parts.tm_min = number(10..<12)
        parts.tm_sec = number(12..<14)
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// curl's lines: `[.]host "YYYYMMDD HH:MM:SS"` (UTC) or `"unlimited"`; a leading dot includes subdomains.
    static func entries(in text: String) -> [(String, Entry)] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("#"), let space = trimmed.firstIndex(of: " ") else {
                return nil
            }
            var host = String(trimmed[..<space]).lowercased()
            let date = trimmed[space...].trimmingCharacters(in: CharacterSet(charactersIn: " \""))
            let subdomains = host.hasPrefix(".")
            if subdomains {
                host.removeFirst()
            }
            guard !host.isEmpty else {
                return nil
            }
            if date == "unlimited" {
                return (host, Entry(includesSubdomains: subdomains, expires: nil))
            }
            guard let expires = Self.date(of: date) else {
                return nil
            }
            return (host, Entry(includesSubdomains: subdomains, expires: expires))
        }
    }

    /// Writes the store's file with the hosts as they are when the write runs.
    private func save() {
        file?.save { [hosts] in
            var text = "# Your HSTS cache. https://curl.se/docs/hsts.html\n# Written by Courier. Edit with care.\n"
            for (host, entry) in hosts.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
                let date = entry.expires.map { HSTSStorage.text(of: $0) } ?? "unlimited"
                text += "\(entry.includesSubdomains ? "." : "")\(host) \"\(date)\"\n"
            }
            return text
        }
    }
}
