import CourierConcurrency
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Credentials a session uses when it handles an authentication challenge by default.
///
/// Keyed by host, port and realm (a nil realm matches any realm of that host and port; a nil port, from a `.netrc`
/// file, any port). In memory only: nothing is written to disk. Thread-safe.
public final class CredentialStorage: Sendable {
    private struct Key: Hashable {
        var host: String
        var port: Int?
        var realm: String?
    }

    private let credentials = LockedValue<[Key: URLCredential]>([:])

    /// The process-wide store of ``SessionConfiguration/default`` configurations.
    public static let shared = CredentialStorage()

    public init() {}

    /// Stores `credential` for a host and port, and optionally a realm.
    public func set(_ credential: URLCredential, host: String, port: Int, realm: String? = nil) {
        credentials.withLock { $0[Key(host: host.lowercased(), port: port, realm: realm)] = credential }
    }

    /// Stores `credential` for a protection space.
    public func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        set(credential, host: space.host, port: space.port, realm: space.realm)
    }

    /// Removes everything.
    public func removeAll() {
        credentials.withLock { $0.removeAll() }
    }

    /// The credential for a protection space: an exact realm match first, then a realm-less entry.
    public func credential(for space: URLProtectionSpace) -> URLCredential? {
        let host = space.host.lowercased()
        return credentials.withLock { table in
            table[Key(host: host, port: space.port, realm: space.realm)]
                ?? table[Key(host: host, port: space.port, realm: nil)]
                ?? table[Key(host: host, port: nil, realm: nil)]
        }
    }

    /// Adds the machines of a `.netrc` file (curl's `--netrc`, ftp's and git's): `machine HOST login USER password
    /// PASSWORD`, each a credential for that host on any port and realm (after an exact entry). `default` entries
    /// and `macdef` macros are skipped: a credential goes only to the host it names. Throws when the file cannot be
    /// read.
    public func readNetrcFile(at url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        for entry in Netrc.entries(in: text) {
            let credential = URLCredential(user: entry.login, password: entry.password, persistence: .forSession)
            credentials.withLock { $0[Key(host: entry.machine.lowercased(), port: nil, realm: nil)] = credential }
        }
    }
}

/// The `.netrc` format: whitespace-separated tokens (`"…"` quotes one with spaces), `machine NAME` starting an entry
/// with `login` and `password` (`account` ignored), `default` starting one for any host, `macdef NAME` a macro that
/// runs to the next blank line.
enum Netrc {
    struct Entry: Equatable {
        var machine: String
        var login: String
        var password: String
    }

    static func entries(in text: String) -> [Entry] {
        var entries: [Entry] = []
        var current: (machine: String?, login: String?, password: String?)?
        func close() {
            if let current, let machine = current.machine, let login = current.login {
                entries.append(Entry(machine: machine, login: login, password: current.password ?? ""))
            }
            current = nil
        }
        var tokens = tokenize(text)[...]
        while let token = tokens.popFirst() {
            switch token {
            case "machine":
                close()
                current = (tokens.popFirst(), nil, nil)
            case "default":
                close()
                current = (nil, nil, nil)
            case "login":
                current?.login = tokens.popFirst()
            case "password":
                current?.password = tokens.popFirst()
            case "account":
                _ = tokens.popFirst()
            case "macdef":
                close()
                _ = tokens.popFirst()
                while let next = tokens.first, next != "\n\n" {
                    tokens.removeFirst()
                }
            default:
                break
            }
        }
        close()
        return entries.filter { !$0.machine.isEmpty }
    }

    /// The tokens of `text`; a blank line is the token "\n\n" (the end of a `macdef`).
    private static func tokenize(_ text: String) -> [String] {
        var tokens: [String] = []
        var token = ""
        var quoted = false
        var newlines = 0
        func flush() {
            if !token.isEmpty {
                tokens.append(token)
                token = ""
            }
        }
        for character in text {
            if quoted {
                if character == "\"" {
                    quoted = false
                    tokens.append(token)
                    token = ""
                } else {
                    token.append(character)
                }
                continue
            }
            if character == "\n" {
                flush()
                newlines += 1
                if newlines == 2 {
                    tokens.append("\n\n")
                }
                continue
            }
            if character.isWhitespace {
                flush()
                continue
            }
            newlines = 0
            if character == "\"" && token.isEmpty {
                quoted = true
            } else {
                token.append(character)
            }
        }
        flush()
        return tokens
    }
}
