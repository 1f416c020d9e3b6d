import ArgumentParser
import Courier
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The session delegate of a transfer command, as the main loop sees it.
protocol TransferCoordinator: AnyObject, Sendable {
    /// Creates and resumes the task of every transfer.
    func start(in session: Session)
    /// Stops every unfinished transfer (after SIGINT, SIGTERM or SIGHUP).
    func interruptAll()
    /// A copy of the state for the display; takes the reports made since the last snapshot.
    func snapshot() -> RunSnapshot
}

/// The main loop shared by `courier get` and `courier put`: starts the transfers, redraws the progress display
/// on every change and tick, turns SIGINT, SIGTERM and SIGHUP into an interrupt (a second one quits at once), waits for
/// the session's invalidation, prints the summary and ends with the exit status.
struct TransferRun {
    let display: ProgressDisplay
    let events: AsyncStream<RunEvent>
    let continuation: AsyncStream<RunEvent>.Continuation
    /// Printed (as `interrupted: …`) when the first interrupt arrives.
    let interruptNotice: String
    /// Runs before the process exits on a second interrupt.
    let cleanUpBeforeQuitting: () -> Void

    /// An ephemeral configuration running at most `parallel` transfers at once (per host and in all), on no more
    /// engine loops than that.
    static func sessionConfiguration(parallel: Int) -> SessionConfiguration {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = parallel
        configuration.maximumConcurrentTransfers = parallel
        configuration.engineLoopCount = min(configuration.engineLoopCount, parallel)
        return configuration
    }

    /// Makes the event stream the coordinator reports to; pass its continuation to the coordinator.
    init(display: ProgressDisplay, interruptNotice: String, cleanUpBeforeQuitting: @escaping () -> Void = {}) {
        self.display = display
        self.interruptNotice = interruptNotice
        self.cleanUpBeforeQuitting = cleanUpBeforeQuitting
        (events, continuation) = AsyncStream.makeStream(of: RunEvent.self)
    }

    /// Runs every transfer of `coordinator` (the delegate of `session`) to its end, invalidates the session and
    /// prints the summary. Throws the exit status: 130 when interrupted, 1 when any transfer did not succeed;
    /// returns when all did.
    func run(session: Session, coordinator: some TransferCoordinator) async throws {
        let signals = Self.forwardSignals(to: continuation)
        let interval: Duration = display.mode == .plain ? .milliseconds(500) : .milliseconds(100)
        let continuation = self.continuation
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                continuation.yield(.tick)
            }
        }

        coordinator.start(in: session)
        var interruptedAt: ContinuousClock.Instant?
        for await event in events {
            if case .interrupt = event {
                if interruptedAt != nil {
                    display.finish()
                    display.emitError("interrupted again: quitting without waiting")
                    cleanUpBeforeQuitting()
                    Glibc.exit(130)
                }
                interruptedAt = .now
                display.emitError("interrupted: \(interruptNotice)")
                coordinator.interruptAll()
            }
            let snapshot = coordinator.snapshot()
            display.update(snapshot)
            if snapshot.remaining == 0 {
                break
            }
            if let interruptedAt, ContinuousClock.now - interruptedAt > .seconds(10) {
                display.emitError("interrupted: some transfers did not stop within 10 s; quitting")
                break
            }
        }
        ticker.cancel()
        for source in signals {
            source.cancel()
        }
        if interruptedAt != nil {
            session.invalidateAndCancel()
        } else {
            session.finishTasksAndInvalidate()
        }
        await waitForInvalidation()
        continuation.finish()

        let final = coordinator.snapshot()
        display.update(final)
        display.finish()
        display.summary(Self.summary(final, interrupted: interruptedAt != nil))

        if interruptedAt != nil {
            throw ExitCode(130)
        }
        if final.transfers.contains(where: { $0.phase != .succeeded }) {
            throw ExitCode.failure
        }
    }

    /// Waits (at most 5 s) until the session reports ``RunEvent/invalidated``, so that it no longer touches
    /// files (such as a staging directory) the command removes afterwards.
    private func waitForInvalidation() async {
        let deadline = ContinuousClock.now + .seconds(5)
        let continuation = self.continuation
        let timeout = Task {
            try? await Task.sleep(until: deadline)
            continuation.yield(.tick)
        }
        defer { timeout.cancel() }
        for await event in events {
            if case .invalidated = event {
                return
            }
            if ContinuousClock.now >= deadline {
                return
            }
        }
    }

    /// `summary: 5/5 files, 335544320 bytes (320 MiB) in 2.10 s, 152.4 MiB/s` (plus failures and interruptions).
    /// The bytes are those transferred in this run (received by `get`, sent by `put`).
    static func summary(_ snapshot: RunSnapshot, interrupted: Bool) -> String {
        let transfers = snapshot.transfers
        let succeeded = transfers.count { $0.phase == .succeeded }
        let failed = transfers.count { $0.phase == .failed }
        let bytes = transfers.reduce(Int64(0)) { $0 + $1.receivedThisRun }
        let end = interrupted ? ContinuousClock.now : (snapshot.lastEndedAt ?? .now)
        let wall = max((end - snapshot.startedAt).inSeconds, 0.000_001)
        var text = "summary: \(succeeded)/\(transfers.count) files, \(bytes) bytes (\(Formatting.bytes(bytes)))"
        text += " in \(Formatting.seconds(wall)), \(Formatting.rate(Double(bytes) / wall))"
        if failed > 0 {
            text += ", \(failed) failed"
        }
        if interrupted {
            text += ", interrupted"
        }
        return text
    }

    /// Turns SIGINT, SIGTERM and SIGHUP (the terminal closed) into ``RunEvent/interrupt`` events. A signal the parent
    /// process ignores (as a non-interactive shell does for SIGINT in background jobs, or `nohup` for SIGHUP) stays
    /// ignored.
    private static func forwardSignals(
        to continuation: AsyncStream<RunEvent>.Continuation
    ) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM, SIGHUP].compactMap { number in
            var current = sigaction()
            sigaction(number, nil, &current)
            if unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == 1 {  // SIG_IGN
                return nil
            }
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                continuation.yield(.interrupt)
            }
            source.resume()
            return source
        }
    }
}
