import ArgumentParser
import Courier
import CourierIPC
import Foundation

/// `courier logs APP`: what an app printed when courierd launched it in the background.
struct Logs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what an app printed when courierd launched it in the background (relaunch, fetch, push).",
        discussion: """
            courierd appends the standard output and error of every process it launches to one file per app, after \
            a line that says when and why, in its state directory (logs/APP.log).
            """
    )

    @Argument(help: "The app's name, as courierd knows it (`courier apps`, `courier sessions`).")
    var app: String

    @Option(name: .shortAndLong, help: "Show only the last N lines.")
    var lines: Int?

    func run() throws {
        let log = DaemonPaths.current.appLog(of: app)
        guard let data = FileManager.default.contents(atPath: log.path) else {
            throw CommandFailure(description: "no log for \(app) at \(log.path): courierd has not launched it")
        }
        var text = String(decoding: data, as: UTF8.self)
        if let lines {
            var all = text.split(separator: "\n", omittingEmptySubsequences: false)
            if all.last == "" {
                all.removeLast()
            }
            text = all.suffix(max(lines, 0)).map { $0 + "\n" }.joined()
        }
        print(text, terminator: "")
    }
}
