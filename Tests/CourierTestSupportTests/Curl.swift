import CourierTestSupport
import Foundation

/// Runs the system `curl` (7.88 here) as the independent client for the server tests.
enum Curl {
    /// What one curl process did.
    struct Output {
        var exitCode: Int32
        var stdout: Data
        var stderr: String
    }

    /// One transfer: status line facts from `-w %{json}`, the body and the headers of the last response.
    struct Transfer {
        var exitCode: Int32
        var body: Data
        /// Every response head curl saw (redirects and 100 Continue included), in order.
        var headBlocks: [[(String, String)]]
        var info: [String: Any]
        var stderr: String

        var status: Int { (info["http_code"] as? Int) ?? (info["response_code"] as? Int) ?? 0 }
        var httpVersion: String { (info["http_version"] as? String) ?? "" }
        var redirects: Int { (info["num_redirects"] as? Int) ?? 0 }
        var effectiveURL: String { (info["url_effective"] as? String) ?? "" }
        var timeTotal: Double { (info["time_total"] as? Double) ?? 0 }
        var timeStartTransfer: Double { (info["time_starttransfer"] as? Double) ?? 0 }
        var text: String { String(decoding: body, as: UTF8.self) }

        /// The headers of the last response.
        var headers: [(String, String)] { headBlocks.last ?? [] }

        /// The first value of `name` in the last response.
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        /// Every value of `name` in the last response.
        func headerValues(_ name: String) -> [String] {
            headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
        }

        /// The body parsed as a JSON object.
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
                throw CurlError.notAJSONObject(text)
            }
            return object
        }
    }

    enum CurlError: Error {
        case notAJSONObject(String)
    }

    /// Runs curl with `arguments` (after `-q`, no proxy, quiet with errors), waiting without blocking a thread.
    /// Started with ``ChildProcess`` (not Foundation's `Process`, which leaks in Swift 6.3.1), in this process's
    /// environment, standard input `/dev/null`. A curl killed by a signal reports 128 + the signal as its
    /// `exitCode`, as a shell would.
    static func run(_ arguments: [String]) async throws -> Output {
        let completed = try await ChildProcess.run(
            "/usr/bin/curl",
            arguments: ["-q", "--silent", "--show-error", "--noproxy", "*"] + arguments,
            environment: ProcessInfo.processInfo.environment
        )
        return Output(
            exitCode: completed.termination.shellStatus,
            stdout: completed.standardOutput,
            stderr: String(decoding: completed.standardError, as: UTF8.self)
        )
    }

    /// One transfer of `url` with `arguments` added; at most `maxTime` seconds.
    static func fetch(_ url: URL, _ arguments: [String] = [], maxTime: Double = 30) async throws -> Transfer {
        try await fetch(url.absoluteString, arguments, maxTime: maxTime)
    }

    /// One transfer of the URL string `url` with `arguments` added; at most `maxTime` seconds.
    static func fetch(_ url: String, _ arguments: [String] = [], maxTime: Double = 30) async throws -> Transfer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("courier-fetch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bodyURL = directory.appendingPathComponent("body")
        let headersURL = directory.appendingPathComponent("headers")
        let output = try await run(
            ["--max-time", String(maxTime), "-o", bodyURL.path, "-D", headersURL.path, "-w", "%{json}"]
                + arguments + [url]
        )
        let body = (try? fileContents(bodyURL)) ?? Data()
        let headerText = String(decoding: (try? fileContents(headersURL)) ?? Data(), as: UTF8.self)
        let info = (try? JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]) ?? [:]
        return Transfer(
            exitCode: output.exitCode,
            body: body,
            headBlocks: parseHeadBlocks(headerText),
            info: info,
            stderr: output.stderr
        )
    }

    /// Splits curl's `-D` dump into response heads, each a list of (name, value).
    static func parseHeadBlocks(_ text: String) -> [[(String, String)]] {
        var blocks: [[(String, String)]] = []
        var current: [(String, String)]?
        // "\r\n" is one Character in Swift, so split on unicode scalars, not characters.
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
        for rawLine in normalized.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            if line.hasPrefix("HTTP/") {
                if let current { blocks.append(current) }
                current = [(":status-line", line)]
            } else if line.isEmpty {
                if let block = current { blocks.append(block) }
                current = nil
            } else if let colon = line.firstIndex(of: ":"), current != nil {
                let name = String(line[..<colon])
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                current?.append((name, value))
            }
        }
        if let current { blocks.append(current) }
        return blocks
    }
}

/// Small shell helpers for independent checks.
enum Shell {
    /// Runs `executable` with `arguments` and returns its standard output as text; `input` (if any) is its standard
    /// input. Blocks the calling thread (bounded: the child is killed after 60 s, and this throws).
    static func output(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> String {
        let completed = try ChildProcess.run(
            executable,
            arguments: arguments,
            environment: ProcessInfo.processInfo.environment,
            standardInput: .bytes(input ?? Data()),
            timeout: .seconds(60)
        )
        return String(decoding: completed.standardOutput, as: UTF8.self)
    }

    /// The lower-case hex SHA-256 of `data`, by `sha256sum`.
    static func sha256(_ data: Data) throws -> String {
        String(try output("/usr/bin/sha256sum", [], input: data).prefix(64))
    }

    /// The lower-case hex MD5 of `text`, by `md5sum`.
    static func md5(_ text: String) throws -> String {
        String(try output("/usr/bin/md5sum", [], input: Data(text.utf8)).prefix(32))
    }
}

/// A temporary file holding `data`; deleted by `remove()`.
struct TemporaryFile {
    let url: URL

    init(_ data: Data) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID().uuidString)")
        try data.write(to: url)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
