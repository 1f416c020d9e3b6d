import ArgumentParser
import Courier
import CourierDaemon
import Dispatch
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// courierd: the per-user background transfer service (docs/ipc.md; issue 13 builds it in steps).
@main
struct Courierd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courierd",
        abstract: "Courier's background transfer service: one per user, on a Unix socket.",
        discussion: """
            Runs in the foreground until SIGTERM or SIGINT; systemd --user runs it as it is (see \
            docs/daemon.md). The socket and the lock live in $XDG_RUNTIME_DIR/courier (or /tmp/courier-<uid>), \
            the journal in $XDG_STATE_HOME/courier (or ~/.local/state/courier); both directories are made 0700 and \
            refused when anyone else can enter them. Only the user running courierd may connect. A second courierd \
            of the same user exits with status 3. Background tasks are journaled before the app hears they \
            started; downloads resume from their bytes on disk after any interruption, this daemon's own crash \
            included; network failures are retried with a doubling delay until the session's resource timeout.
            """,
        version: DaemonServer.version
    )

    @Option(help: "The directory of the socket and the lock (default: $XDG_RUNTIME_DIR/courier)")
    var runtimeDirectory: String?

    @Option(help: "The directory of the journal (default: $XDG_STATE_HOME/courier)")
    var stateDirectory: String?

    @Option(help: "Seconds before the first retry of a transfer that failed on the network; later ones double")
    var retryDelay: Double = 30

    @Option(help: "Seconds between a waiting task's looks at the power supply and the network")
    var conditionPoll: Double = 10

    @Option(help: "Seconds finished downloads handed over unflushed gather before one flush of the batch, while no transfer runs")
    var fileFlushDelay: Double = 0.25

    @Option(help: "Seconds at most a batch of finished downloads waits for the running transfers to end before it is flushed")
    var fileFlushPatience: Double = 5

    @Option(help: "Seconds before an app is relaunched a second time for its background events; each later relaunch doubles it (the first is at once)")
    var relaunchDelay: Double = 60

    @Option(help: "Serve pushes over HTTP on 127.0.0.1 at this port, as APNs's POST /3/device/<token> (0: a free port, written to push-port in the runtime directory)")
    var pushPort: UInt16?

    @Option(help: "The shortest interval between background fetches of an app, in seconds (default 900; shorter for testing)")
    var fetchMinimumInterval: Double?

    @Option(help: "Seconds a suspended app instance with no background work left stays before courierd ends it (0: never; default 600)")
    var reclaimIdleAfter: Double = DaemonServer.defaultIdleReclaimDelay

    @Option(help: "The most transfers running at once, over all sessions (default 16). A task of higher priority starts first, and when all run, it pauses the running one of the lowest lower priority, which goes on later from its partial file")
    var maxTransfers: Int = TransferSlots.defaultLimit

    @Option(help: "The most bytes per second all background transfers receive together, as curl writes it: 500K, 2M, 1.5M (powers of 1024), or plain bytes (default: no limit)")
    var limitRate: String?

    @Option(help: "With --limit-rate: the limit applies only during this local time of day, HH:MM-HH:MM (22:00-06:00 spans midnight)")
    var limitWindow: String?

    @Option(help: "Bytes of events courierd holds for an app that is not reading its socket before it holds back more, sent again from the journal once the app reads (default 4 MiB)")
    var clientOutboxLimit: Int = DaemonServer.defaultClientOutboxLimit

    @Flag(help: "Show no desktop notification when a background download finishes while its app is not running (shown by default where a session bus exists)")
    var noNotifications = false

    /// `--limit-rate` and `--limit-window`, checked: a bad value is a usage error (exit 64).
    func validate() throws {
        guard maxTransfers >= 1 else {
            throw ValidationError("--max-transfers must be at least 1 (got \(maxTransfers)).")
        }
        if let limitRate, BandwidthLimit(rate: limitRate) == nil {
            throw ValidationError("--limit-rate takes bytes per second: 500K, 2M, 1.5M or 100000 (got \(limitRate)).")
        }
        if let limitWindow {
            guard limitRate != nil else {
                throw ValidationError("--limit-window needs --limit-rate.")
            }
            guard BandwidthLimit.Window(limitWindow) != nil else {
                throw ValidationError("--limit-window takes HH:MM-HH:MM (got \(limitWindow)).")
            }
        }
    }

    private func bandwidthLimiter(logger: Logger) -> BandwidthLimiter? {
        let window = limitWindow.flatMap(BandwidthLimit.Window.init)
        guard let limitRate, let limit = BandwidthLimit(rate: limitRate, window: window) else {
            return nil
        }
        logger.info(
            "bandwidth limited",
            metadata: ["bytesPerSecond": "\(limit.bytesPerSecond)", "window": "\(limit.window?.description ?? "always")"]
        )
        return BandwidthLimiter(limit)
    }

    func run() throws {
        var logger = Logger(label: "courierd") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .info
        var paths = DaemonPaths.current
        if let runtimeDirectory {
            paths.runtimeDirectory = URL(fileURLWithPath: runtimeDirectory)
        }
        if let stateDirectory {
            paths.stateDirectory = URL(fileURLWithPath: stateDirectory)
        }
        var fetchPolicy = FetchScheduler.Policy()
        if let fetchMinimumInterval {
            // Until a usual time of use is learned, fetches are this far apart too (an hour by default).
            fetchPolicy.minimumInterval = fetchMinimumInterval
            fetchPolicy.unlearnedInterval = fetchMinimumInterval
        }
        let server: DaemonServer
        do {
            var settings = TransferSettings()
            settings.retryPolicy = RetryPolicy(initialDelay: retryDelay)
            settings.conditionPollInterval = conditionPoll
            settings.fileFlushDelay = fileFlushDelay
            settings.fileFlushPatience = fileFlushPatience
            settings.bandwidthLimiter = bandwidthLimiter(logger: logger)
            settings.slots = TransferSlots(limit: maxTransfers)
            server = try DaemonServer(
                paths: paths,
                logger: logger,
                settings: settings,
                relaunchLimiter: ResumeRateLimiter(initialDelay: relaunchDelay),
                notifier: noNotifications ? nil : DesktopNotifier(logger: logger),
                fetchPolicy: fetchPolicy,
                pushPort: pushPort,
                idleReclaimDelay: reclaimIdleAfter > 0 ? reclaimIdleAfter : nil,
                clientOutboxLimit: max(clientOutboxLimit, 1)
            )
        } catch .alreadyRunning(let lockFile) {
            logger.notice("another courierd is running", metadata: ["lock": "\(lockFile)"])
            throw ExitCode(3)
        } catch {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        signal(SIGPIPE, SIG_IGN)
        ReadinessPipe.say()
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        // Relaunched apps are not waited for: the kernel reaps them.
        signal(SIGCHLD, SIG_IGN)
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { server.stop() }
            source.resume()
            sources.append(source)
        }
        let clean = server.run()
        withExtendedLifetime(sources) {}
        if !clean {
            throw ExitCode(1)
        }
    }
}
