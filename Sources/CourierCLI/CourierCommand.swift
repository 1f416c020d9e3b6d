import ArgumentParser
import Courier
import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

extension CourierCommand {
    /// Ends the process for `error` as ArgumentParser does (its message, usage for a bad argument, its exit status),
    /// but written `error: …` like every other error line of the tool.
    static func exit(reporting error: any Error) -> Never {
        let code = exitCode(for: error)
        guard code != .success else {
            exit(withError: error)  // --help, --version
        }
        var message = fullMessage(for: error)
        if message.hasPrefix("Error: ") {
            message = "error: " + message.dropFirst("Error: ".count)
        }
        FileHandle.standardError.write(Data((message + "\n").utf8))
        end(code.rawValue)
    }

    /// Ends the process with `code` once its transfer engines are torn down, which an invalidated session does on
    /// another thread just after its last delegate call (waiting 2 s at most). Exiting first raced OpenSSL's exit-time
    /// cleanup against an engine's loop thread still ending: that thread's random generators were then freed by
    /// neither (LeakSanitizer reported them in one `courier get` over TLS in six).
    static func end(_ code: Int32) -> Never {
        _ = EngineCensus.waitForNoLiveEngines(atMost: 2)
        Glibc.exit(code)
    }
}
