import ArgumentParser
import Courier

/// `courier fetch simulate|launch APP`: Xcode's "Simulate Background Fetch" and "launch due to a background fetch
/// event".
struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make courierd wake an app for a background fetch now.",
        subcommands: [Simulate.self, Launch.self]
    )

    struct Simulate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wake the app for a fetch: a running app at once (a suspended one is resumed in the background), "
                + "one that is not running is launched for it."
        )

        @Argument(help: "The app's name (`courier apps`).")
        var app: String

        func run() throws {
            try Fetch.trigger(app, launch: false)
            print("fetch: \(app) woken")
        }
    }

    struct Launch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Launch the app into the background for a fetch (COURIER_BACKGROUND_LAUNCH=fetch); refused while it runs."
        )

        @Argument(help: "The app's name (`courier apps`).")
        var app: String

        func run() throws {
            try Fetch.trigger(app, launch: true)
            print("fetch: \(app) launched")
        }
    }

    static func trigger(_ app: String, launch: Bool) throws {
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        _ = try DaemonClient.request(connection) { .triggerFetch(.init(request: $0, app: app, launch: launch)) }
    }
}
