import ArgumentParser
import CourierIPC

/// The `courier` command-line tool: transfers with Courier sessions, and the steering of courierd.
///
/// Each job is a subcommand (`courier get`, `courier put`, `courier tasks`, …); `main.swift` runs it, unless courierd
/// launched the tool in the background for its session's events (``BackgroundDelivery``).
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier",
        abstract: "Transfer files over HTTP and HTTPS with Courier.",
        version: CourierVersion.current,
        subcommands: [
            Get.self, Put.self, Sessions.self, Tasks.self, Cancel.self, Kill.self, Daemon.self, Push.self, Fetch.self,
            Apps.self, Logs.self,
        ],
        // `courier URL…` is `courier get URL…`, as curl and wget take URLs directly.
        defaultSubcommand: Get.self
    )
}
