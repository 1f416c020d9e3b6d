import BenchClientKit
import BenchmarkSupport
import Courier
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A download workload through a background session, as an app would run it: every task created and resumed at
/// once (`resume()` returns when courierd has journaled the task), then the delegate hears each download finish
/// and moves its file into place. courierd is this run's own (``PrivateDaemon``), started before the session and
/// stopped after it; both are inside the run's wall time.
///
/// The app cannot size courierd's session: the daemon runs every background session on an in-process session of
/// its own configuration, not the app's `httpMaximumConnectionsPerHost` or loop count.
///
/// Phase times go to standard error (one line, `bench-courier-bg:`), for finding where the time goes.
struct BackgroundClient: BenchmarkClient {
    let plan: TransferPlan

    func run() async throws -> ClientReport {
        let workload = plan.workload
        guard workload.kind == .disk else {
            throw TransferFailed(
                url: URL(fileURLWithPath: workload.name),
                reason: "a background session runs download workloads only (W3, W4): it has no data tasks and "
                    + "uploads only from files")
        }
        let clock = ContinuousClock()
        let started = clock.now
        func since(_ instant: ContinuousClock.Instant?) -> String {
            guard let instant else {
                return "-"
            }
            let elapsed = instant - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            return String(format: "%.3f", seconds)
        }

        let daemon = try PrivateDaemon(
            stateParent: plan.output.deletingLastPathComponent(), maxTransfers: workload.concurrency)
        let daemonReady = clock.now
        let delegate = DownloadDelegate(plan: plan, clock: clock)
        var configuration = SessionConfiguration.background(withIdentifier: "bench.\(workload.name.lowercased())")
        // This process is not an app to relaunch.
        configuration.sessionSendsLaunchEvents = false
        // Where each finished file is linked for the delegate: the output folder, so that the move is a rename.
        configuration.temporaryDirectory = plan.output
        // As many connections as transfers in flight, as every client of the comparison (courierd honours it).
        configuration.httpMaximumConnectionsPerHost = workload.concurrency
        if let authority = plan.certificateAuthority, let pem = try? Data(contentsOf: authority) {
            configuration.trustedCertificateAuthorities = .pem(pem)
        }
        let session = Session(configuration: configuration, delegate: delegate)
        let sessionOpen = clock.now

        var firstResumed: ContinuousClock.Instant?
        for index in 0..<workload.count {
            let task = session.downloadTask(with: plan.url(index))
            task.taskDescription = String(index)
            task.resume()
            if firstResumed == nil {
                firstResumed = clock.now
            }
        }
        let allResumed = clock.now
        await delegate.waitForAll(workload.count)
        let allCompleted = clock.now

        session.finishTasksAndInvalidate()
        let invalidated = await delegate.waitForInvalidation(timeout: .seconds(5))
        let sessionClosed = clock.now
        let usage = daemon.stop()
        let stopped = clock.now

        let outcome = delegate.outcome
        FileHandle.standardError.write(
            Data(
                ("bench-courier-bg: courierd ready \(since(daemonReady)) s, session open \(since(sessionOpen)) s, "
                    + "first resume returned \(since(firstResumed)) s, \(workload.count) resumed \(since(allResumed)) s, "
                    + "first progress \(since(outcome.firstProgress)) s, first file \(since(outcome.firstFile)) s, "
                    + "all completed \(since(allCompleted)) s, session closed \(since(sessionClosed)) s"
                    + (invalidated ? "" : " (no didBecomeInvalid within 5 s)")
                    + ", courierd stopped \(since(stopped)) s; "
                    + String(
                        format: "courierd CPU %.2f s, peak RSS %.1f MiB\n", usage?.cpu ?? .nan,
                        Double(usage?.peakRSS ?? 0) / 1_048_576)).utf8))
        if !outcome.failures.isEmpty {
            throw TransferFailed(
                url: plan.url(0),
                reason: "\(outcome.failures.count) of \(workload.count) downloads failed; first: "
                    + outcome.failures.prefix(3).joined(separator: "; "))
        }
        return ClientReport(succeeded: outcome.succeeded, bytes: outcome.bytes)
    }

    func fetch(_ url: URL) async throws -> Int {
        throw TransferFailed(url: url, reason: "background sessions have no data tasks")
    }

    func download(_ url: URL, to destination: URL) async throws -> Int {
        throw TransferFailed(url: url, reason: "background downloads are run by run(), not one at a time")
    }

    func upload(_ body: Data, to url: URL) async throws -> Int {
        throw TransferFailed(url: url, reason: "background sessions upload from files only")
    }

    func shutdown() async throws {}
}

/// The session's delegate: moves each finished download to its destination and counts completions.
final class DownloadDelegate: SessionDownloadDelegate, Sendable {
    struct Outcome {
        var completed = 0
        var succeeded = 0
        var bytes = 0
        var failures: [String] = []
        var firstProgress: ContinuousClock.Instant?
        var firstFile: ContinuousClock.Instant?
        /// Downloads whose file was moved into place (by index); a completion without one failed.
        var placed: Set<Int> = []
        var invalidated = false
    }

    private struct State {
        var outcome = Outcome()
        var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
        var invalidationWaiter: CheckedContinuation<Bool, Never>?
    }

    private let plan: TransferPlan
    private let clock: ContinuousClock
    private let state = Mutex(State())

    init(plan: TransferPlan, clock: ContinuousClock) {
        self.plan = plan
        self.clock = clock
    }

    var outcome: Outcome {
        state.withLock { $0.outcome }
    }

    /// Returns once `count` tasks completed (successfully or not).
    func waitForAll(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard state.outcome.completed < count else {
                    return true
                }
                state.waiter = (count, continuation)
                return false
            }
            if ready {
                continuation.resume()
            }
        }
    }

    /// True once the session reported its invalidation; false after `timeout`.
    func waitForInvalidation(timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                guard !state.outcome.invalidated else {
                    return true
                }
                state.invalidationWaiter = continuation
                return false
            }
            if done {
                continuation.resume(returning: true)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let waiter = self.state.withLock { state in
                    defer { state.invalidationWaiter = nil }
                    return state.invalidationWaiter
                }
                waiter?.resume(returning: false)
            }
        }
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        let now = clock.now
        state.withLock { state in
            if state.outcome.firstProgress == nil {
                state.outcome.firstProgress = now
            }
        }
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        let now = clock.now
        guard let index = downloadTask.taskDescription.flatMap(Int.init) else {
            fail("a finished download without its index")
            return
        }
        let url = plan.url(index)
        guard let response = downloadTask.response as? HTTPURLResponse else {
            fail("\(url): no HTTP response")
            return
        }
        guard (200..<300).contains(response.statusCode) else {
            fail("\(url): status \(response.statusCode)")
            return
        }
        let destination = plan.destination(index)
        do {
            try FileManager.default.moveItem(at: location, to: destination)
            let size =
                (try FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? NSNumber)?.intValue
                ?? -1
            guard size == plan.workload.fixture.size else {
                fail("\(url): \(size) bytes, expected \(plan.workload.fixture.size)")
                return
            }
            state.withLock { state in
                state.outcome.placed.insert(index)
                state.outcome.bytes += size
                if state.outcome.firstFile == nil {
                    state.outcome.firstFile = now
                }
            }
        } catch {
            fail("\(url): \(error)")
        }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        let index = task.taskDescription.flatMap(Int.init)
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.outcome.completed += 1
            let name = index.map { plan.url($0).absoluteString } ?? "a download without its index"
            if let error {
                state.outcome.failures.append("\(name): \(error)")
            } else if let index, state.outcome.placed.contains(index) {
                state.outcome.succeeded += 1
            } else if state.outcome.failures.isEmpty {
                // (didFinishDownloadingTo said why, unless it was never called.)
                state.outcome.failures.append("\(name): completed without a file")
            }
            guard let waiter = state.waiter, state.outcome.completed >= waiter.count else {
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        let waiter = state.withLock { state in
            state.outcome.invalidated = true
            defer { state.invalidationWaiter = nil }
            return state.invalidationWaiter
        }
        waiter?.resume(returning: true)
    }

    private func fail(_ reason: String) {
        state.withLock { $0.outcome.failures.append(reason) }
    }
}
