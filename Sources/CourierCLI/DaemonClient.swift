import Courier
import CourierIPC
import Foundation

/// What the background-service subcommands share: a connection to this user's courierd, its requests, and the two
/// output forms (a table on a terminal, JSON with `--json`).
enum DaemonClient {
    /// What to run when courierd is not running, for the messages that say so.
    static let startHint = "start it with `courier daemon start`, or make it a service that starts at login with "
        + "`courier daemon install`"

    /// Connects to courierd, starting it when none answers (as a background session does: the queued transfers go
    /// on from then), and says so on standard error. With `startingDaemon` false, a courierd that is not running is
    /// an error that says what to run.
    static func connect(startingDaemon: Bool = true) throws -> DaemonConnection {
        let paths = DaemonPaths.current
        switch DaemonConnection.open(paths: paths, app: "courier", startingDaemon: false) {
        case .success(let connection):
            return connection
        case .failure(let error) where !startingDaemon:
            throw CommandFailure(description: "\(error.message); \(startHint)")
        case .failure:
            break
        }
        switch DaemonConnection.open(paths: paths, app: "courier", startingDaemon: true) {
        case .success(let connection):
            FileHandle.standardError.write(Data("courierd was not running: started it\n".utf8))
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
                // Padded by characters, as the widths are counted (Foundation's `padding(toLength:)` counts UTF-16 units,
                // misaligning a cell with an emoji, and bridged every cell through NSString: 10 % of `courier tasks`
                // listing 100,000 tasks).
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
