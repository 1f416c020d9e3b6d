import Courier
import Foundation

/// What the background-service subcommands share: a connection to this user's courierd (never started by them),
/// its requests, and the two output forms (a table on a terminal, JSON with `--json`).
enum DaemonClient {
    /// Connects to the running courierd; a daemon that is not running is a clear error, not a start.
    static func connect() throws -> DaemonConnection {
        switch DaemonConnection.open(paths: DaemonPaths.current, app: "courier", startingDaemon: false) {
        case .success(let connection):
            return connection
        case .failure(let error):
            throw CommandFailure(description: error.message)
        }
    }

    /// Sends one request and returns its result, or throws the daemon's refusal.
    static func request(
        _ connection: DaemonConnection,
        _ make: (UInt64) -> IPCMessage
    ) throws -> IPCMessage.Reply.Result {
        switch connection.request(make) {
        case .success(let result):
            return result
        case .failure(let error):
            throw CommandFailure(description: error.message)
        }
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Columns padded to their widest cell, two spaces apart.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
