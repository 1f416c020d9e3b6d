import CourierConcurrency
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Credentials a session uses when it handles an authentication challenge by default.
///
/// Keyed by host, port and realm (a nil realm matches any realm of that host and port; a nil port, from a `.netrc`
/// file, any port). A store made with ``init(persistingTo:)`` keeps its `.permanent` credentials in a file, as Apple's
/// shared store keeps them in the keychain; everything else lives in memory. A session also stores here the credential
/// its delegate answered a challenge with, unless its persistence is `.none` (as URLSession does). Thread-safe.
public final class CredentialStorage: Sendable {
    private struct Key: Hashable {
        var host: String
        var port: Int?
        var realm: String?
    }

    private let credentials = LockedValue<[Key: URLCredential]>([:])
    /// The file of `.permanent` credentials (``init(persistingTo:)``).
    private let file: KeptFile?

    /// The process-wide store of ``SessionConfiguration/default`` configurations: `.permanent` credentials are kept in
    /// `$XDG_STATE_HOME/courier/credentials.netrc` (else `~/.local/state/courier/credentials.netrc`), a `.netrc`
    /// file of mode 0600 that curl's `--netrc-file` reads too; the rest in memory.
    public static let shared: CredentialStorage =
        (try? CredentialStorage(file: .inStateDirectory("credentials.netrc"))) ?? CredentialStorage()

    /// An empty store in memory.
    public init() {
        file = nil
    }

    /// A store whose `.permanent` credentials are kept in the `.netrc` file at `url` (plain text, mode 0600 in a 0700
    /// directory, written atomically after each change; curl's `--netrc-file` reads it): its machines are read now (a
    /// missing file is an empty store), each answering its host on any port and realm, as a `.netrc` machine does.
    /// Credentials of other persistences stay in memory. Throws when the file exists and cannot be read.
    public convenience init(persistingTo url: URL) throws {
        try self.init(file: KeptFile(url, makesDirectory: true))
    }

    private init(file: KeptFile) throws {
        self.file = file
        if let text = try file.read() {
            add(Netrc.entries(in: text), persistence: .permanent)
        }
    }

    /// Stores `credential` for a host and port, and optionally a realm.
    public func set(_ credential: URLCredential, host: String, port: Int, realm: String? = nil) {
        credentials.withLock { $0[Key(host: host.lowercased(), port: port, realm: realm)] = credential }
        if credential.persistence == .permanent {
            save()
        }
    }

    /// Stores `credential` for a protection space.
    public func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        set(credential, host: space.host, port: space.port, realm: space.realm)
    }

    /// Removes everything (the file's credentials too).
    public func removeAll() {
        credentials.withLock { $0.removeAll() }
        save()
    }

    /// Returns once the store's file holds every change made before the call.
    public func synchronize() {
        file?.flush()
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
        add(Netrc.entries(in: try String(contentsOf: url, encoding: .utf8)), persistence: .forSession)
    }

    private func add(_ entries: [Netrc.Entry], persistence: URLCredential.Persistence) {
        for entry in entries {
            let credential = URLCredential(user: entry.login, password: entry.password, persistence: persistence)
            credentials.withLock { $0[Key(host: entry.machine.lowercased(), port: nil, realm: nil)] = credential }
        }
    }

    /// Writes the file with the `.permanent` credentials as they are when the write runs. A password or user with a
    /// `"` or a line break cannot be written in `.netrc` form and stays in memory only.
    private func save() {
        file?.save { [credentials] in
            let kept = credentials.withLock { table in
                table.filter { $0.value.persistence == .permanent }.map { ($0.key.host, $0.value) }
            }
            var text = "# Courier's kept credentials (.netrc form). Written by Courier.\n"
            for (host, credential) in kept.sorted(by: { $0.0 < $1.0 }) {
                let fields = [host, credential.user ?? "", credential.password ?? ""]
                guard !fields.contains(where: { $0.contains("\"") || $0.contains("\n") || $0.contains("\r") }) else {
                    continue
                }
                let quoted = fields.map { "\"\($0)\"" }
                text += "machine \(quoted[0]) login \(quoted[1]) password \(quoted[2])\n"
            }
            return text
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
