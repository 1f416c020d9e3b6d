import ArgumentParser
import Courier
import Foundation

/// `courier apps`: the apps registered for background fetch and remote notifications.
struct Apps: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the apps registered with courierd: device token, fetch interval, next fetch and why, last fetch."
    )

    @Flag(help: "Print JSON for scripts (every field, the last five fetches).")
    var json = false

    func run() throws {
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        guard case .apps(let apps) = try DaemonClient.request(connection, { .listApps(.init(request: $0)) }) else {
            throw CommandFailure(description: "courierd answered something else than an app list")
        }
        if json {
            print(try DaemonClient.json(apps))
            return
        }
        let rows = apps.map { app -> [String] in
            let last = app.lastFetches.last.map { fetch in
                "\(Self.time(fetch.at)) \(fetch.outcome) \(Formatting.bytes(fetch.bytes))"
            }
            return [
                app.app, app.running ? "yes" : "no", app.deviceToken ?? "-", Self.interval(app.fetchInterval),
                app.nextFetch.map { "\(Self.time($0)) (\(app.nextFetchReason ?? ""))" } ?? "never", last ?? "-",
            ]
        }
        print(DaemonClient.table(["APP", "RUNNING", "DEVICE TOKEN", "FETCH INTERVAL", "NEXT FETCH", "LAST FETCH"], rows))
    }

    static func interval(_ seconds: Double?) -> String {
        guard let seconds else {
            return "never"
        }
        return seconds == 0 ? "minimum" : "\(Int(seconds)) s"
    }

    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }
}
