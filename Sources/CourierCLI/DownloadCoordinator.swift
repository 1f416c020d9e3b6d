import Courier
import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate of a `courier get` run: follows every download, saves finished files under their
/// destination names, keeps partial downloads for `--continue`, and tells the main loop when something changed.
///
/// A download succeeds only with a 2xx final response: any other status (a 401 or 404 with an empty body too,
/// whether or not the session delivered a file) fails it, and nothing is saved. The destination is the plan's
/// URL-derived name, or the (sanitised) name of the response's `Content-Disposition` when
/// `usesContentDisposition`; either way an existing file, or a name another URL of the run reserved, gets a
/// `-N` name unless `--force`. Partial downloads stay keyed by the plan's name.
///
/// Delegate calls arrive serially on the session's delegate queue; the main loop reads snapshots from another
/// thread, so all state lives behind one mutex. No delegate call blocks on the main loop, and nothing is printed
/// from here: lines go to the main loop as ``Report``s.
final class DownloadCoordinator: SessionDownloadDelegate, TransferCoordinator {
    private struct State {
        var transfers: [TransferProgress]
        /// taskIdentifier → plan index, for the task currently running each plan.
        var planOfTask: [Int: Int] = [:]
        /// plan index → its current task.
        var tasks: [Int: DownloadTask] = [:]
        /// Plans whose current task was made from resume data (a failed resume falls back to a fresh download).
        var madeFromResumeData: Set<Int> = []
        /// What `didFinishDownloadingTo` decided, reported when `didCompleteWithError` arrives.
        var outcomes: [Int: Result<String, Failure>] = [:]
        /// Plans cancelled by an interrupt, and those whose resume data callback has not arrived yet.
        var interrupted: Set<Int> = []
        var awaitingResumeData: Set<Int> = []
        /// Plans whose task reported completion (an interrupted plan also waits for its resume data).
        var taskCompleted: Set<Int> = []
        /// Plans whose response was already looked at for a `Content-Disposition` name (for the display).
        var namesChecked: Set<Int> = []
        /// The names of every plan and of every file saved in this run: a name from `Content-Disposition`
        /// never takes one of them (so two URLs never write one file, even with `--force`).
        var claimed: Set<String>
        /// Attempts made after a failure that may pass (`--retry`), per plan.
        var retriesMade: [Int: Int] = [:]
        /// Plans waiting to be tried again, with the resume data to go on from (kept on an interrupt).
        var waitingToRetry: [Int: Data?] = [:]
        var reports: [Report] = []
        /// The status of each plan's last response, for `--on-complete`.
        var httpStatuses: [Int: Int] = [:]
        var remaining: Int
        var lastEndedAt: ContinuousClock.Instant?
    }

    struct Failure: Error, Sendable {
        var message: String
    }

    let plans: [TransferPlan]
    let outputDirectory: URL
    let overwrite: Bool
    /// Whether a `Content-Disposition` file name replaces the plan's name.
    let usesContentDisposition: Bool
    /// How many times a plan is tried again after a failure that may pass (``RetryRule``).
    let retries: Int
    /// `--checksum`: the digest every download of the run must have.
    let checksum: Checksum?
    /// `--priority`.
    let priority: Float
    /// `--on-complete`: run when each plan ends (saved or failed).
    let onComplete: String?
    let partials: PartialDownloads
    let startedAt: ContinuousClock.Instant
    /// `--insecure`: every server's certificate is accepted.
    let acceptsAnyServer: Bool
    private let events: AsyncStream<RunEvent>.Continuation
    private let state: LockedValue<State>

    init(
        plans: [TransferPlan],
        outputDirectory: URL,
        overwrite: Bool,
        usesContentDisposition: Bool,
        retries: Int = 0,
        checksum: Checksum? = nil,
        priority: Float = SessionTask.defaultPriority,
        onComplete: String? = nil,
        acceptsAnyServer: Bool = false,
        events: AsyncStream<RunEvent>.Continuation
    ) {
        self.acceptsAnyServer = acceptsAnyServer
        self.plans = plans
        self.outputDirectory = outputDirectory
        self.overwrite = overwrite
        self.usesContentDisposition = usesContentDisposition
        self.retries = retries
        self.checksum = checksum
        self.priority = priority
        self.onComplete = onComplete
        self.partials = PartialDownloads(directory: outputDirectory)
        self.events = events
        self.startedAt = .now
        self.state = LockedValue(
            State(
                transfers: plans.map { _ in TransferProgress() },
                claimed: Set(plans.map(\.name)),
                remaining: plans.count
            )
        )
    }

    /// `--insecure` accepts any server; otherwise the session verifies it.
    func urlSession(
        _ session: Session,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let (disposition, credential) = RequestFlags.judge(challenge, acceptingAnyServer: acceptsAnyServer)
        completionHandler(disposition, credential)
    }

    // MARK: Starting and stopping

    /// Creates and resumes the task of every plan.
    func start(in session: Session) {
        for plan in plans {
            start(plan, in: session, fromResumeData: plan.resumeData)
        }
    }

    private func start(_ plan: TransferPlan, in session: Session, fromResumeData resumeData: Data?) {
        let task: DownloadTask
        if let resumeData {
            task = session.downloadTask(withResumeData: resumeData)
        } else {
            task = session.downloadTask(with: plan.url)
        }
        task.taskDescription = plan.name
        task.expectedChecksum = checksum
        task.priority = priority
        state.withLock { state in
            state.planOfTask[task.taskIdentifier] = plan.index
            state.tasks[plan.index] = task
            if resumeData != nil {
                state.madeFromResumeData.insert(plan.index)
            } else {
                state.madeFromResumeData.remove(plan.index)
            }
        }
        task.resume()
    }

    /// Stops every unfinished transfer, keeping what can be resumed (`NAME.part` + `NAME.part.resume`).
    func interruptAll() {
        let waiting = state.withLock { state in
            defer { state.waitingToRetry.removeAll() }
            return state.waitingToRetry
        }
        for (index, resumeData) in waiting.sorted(by: { $0.key < $1.key }) {
            if let resumeData {
                keep(resumeData, for: index)
            }
            finishInterrupted(index)
        }
        let running: [(Int, DownloadTask)] = state.withLock { state in
            var running: [(Int, DownloadTask)] = []
            for (index, task) in state.tasks.sorted(by: { $0.key < $1.key })
            where !state.transfers[index].isFinished && !state.interrupted.contains(index) {
                state.interrupted.insert(index)
                state.awaitingResumeData.insert(index)
                running.append((index, task))
            }
            return running
        }
        for (index, task) in running {
            task.cancel(byProducingResumeData: { [self] data in
                resumeDataArrived(data, for: index, from: task)
            })
        }
    }

    /// A copy of the state for the display; takes the reports made since the last snapshot.
    func snapshot() -> RunSnapshot {
        state.withLock { state in
            defer { state.reports.removeAll() }
            return RunSnapshot(
                transfers: state.transfers,
                reports: state.reports,
                remaining: state.remaining,
                startedAt: startedAt,
                lastEndedAt: state.lastEndedAt
            )
        }
    }

    // MARK: SessionDownloadDelegate

    func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        // The session removes its staging directory right after this call returns, on its serial delegate
        // queue (the session made it: the delegate queue given was nil). Report once that is done.
        let events = self.events
        session.delegateQueue.addOperation {
            events.yield(.invalidated)
        }
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        let firstLook = state.withLock { state -> Int? in
            guard let index = state.planOfTask[downloadTask.taskIdentifier] else {
                return nil
            }
            var transfer = state.transfers[index]
            if transfer.phase == .waiting {
                transfer.phase = .running
                transfer.startedAt = transfer.startedAt ?? .now
            }
            transfer.written = totalBytesWritten
            transfer.expected = totalBytesExpectedToWrite
            state.transfers[index] = transfer
            return usesContentDisposition && state.namesChecked.insert(index).inserted ? index : nil
        }
        // The response is there once bytes arrive: show the name it asks for from now on.
        if let index = firstLook, let name = suggestedName(downloadTask.response) {
            state.withLock { $0.transfers[index].name = name }
        }
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        state.withLock { state in
            guard let index = state.planOfTask[downloadTask.taskIdentifier] else {
                return
            }
            let name = plans[index].name
            state.transfers[index].phase = .running
            state.transfers[index].startedAt = .now
            state.transfers[index].resumedOffset = fileOffset
            state.transfers[index].written = fileOffset
            state.transfers[index].expected = expectedTotalBytes
            if fileOffset > 0 {
                let total = expectedTotalBytes >= 0 ? " of \(Formatting.bytes(expectedTotalBytes))" : ""
                state.reports.append(.notice("resuming \(name) at \(Formatting.bytes(fileOffset))\(total)"))
            } else {
                state.reports.append(.notice("\(name): the server sent the whole file again; starting over"))
            }
        }
        events.yield(.changed)
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        guard let index = state.withLock({ $0.planOfTask[downloadTask.taskIdentifier] }) else {
            return
        }
        let outcome: Result<String, Failure>
        let response = downloadTask.response
        if let failure = FailureText.status(of: response) {
            outcome = .failure(Failure(message: failure))
        } else {
            let suggested = suggestedName(response)
            if let suggested {
                state.withLock { $0.transfers[index].name = suggested }
            }
            outcome = place(location, for: index, as: suggested ?? plans[index].name)
        }
        state.withLock { $0.outcomes[index] = outcome }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        guard let index = state.withLock({ $0.planOfTask.removeValue(forKey: task.taskIdentifier) }) else {
            return
        }
        let plan = plans[index]
        let (interrupted, fromResumeData, outcome) = state.withLock { state in
            state.httpStatuses[index] = (task.response as? HTTPURLResponse)?.statusCode
            return (
                state.interrupted.contains(index),
                state.madeFromResumeData.contains(index),
                state.outcomes.removeValue(forKey: index)
            )
        }

        guard let error else {
            // Checked again here: a task may complete without didFinishDownloadingTo (no body, no file).
            if let failure = FailureText.status(of: task.response) {
                if case .success(let savedAs) = outcome {
                    FileSystem.removeIfPresent(outputDirectory.appendingPathComponent(savedAs))
                }
                let response = task.response as? HTTPURLResponse
                if RetryRule.retries(status: response?.statusCode),
                    retry(index, in: session, because: failure, after: RetryRule.retryAfter(response), from: nil)
                {
                    return
                }
                fail(index, message: failure, madeFromResumeData: fromResumeData)
                return
            }
            switch outcome {
            case .success(let savedAs):
                if plan.hasKeptPartial || fromResumeData {
                    partials.discard(name: plan.name)
                }
                finish(index, phase: .succeeded, savedAs: savedAs, report: .succeeded(index: index))
            case .failure(let failure):
                fail(index, message: failure.message, madeFromResumeData: fromResumeData)
            case nil:
                fail(index, message: "the download ended without a file", madeFromResumeData: fromResumeData)
            }
            return
        }

        if interrupted {
            let done = state.withLock { state -> Bool in
                state.taskCompleted.insert(index)
                return !state.awaitingResumeData.contains(index)
            }
            if done {
                finishInterrupted(index)
            }
            return
        }

        let courierError = error as? CourierError
        if fromResumeData, let code = courierError?.code, code == .cannotResume || code == .fileChanged {
            // The kept partial cannot be used (gone, changed, or from an older format): start over.
            let reason = courierError.map { $0.message.isEmpty ? "\($0.code)" : $0.message } ?? "\(error)"
            partials.discard(name: plan.name)
            state.withLock { state in
                state.reports.append(.warning("\(plan.name): cannot resume (\(reason)); downloading it again"))
            }
            events.yield(.changed)
            start(plan, in: session, fromResumeData: nil)
            return
        }

        var message = FailureText.describe(error)
        if let courierError, RetryRule.retries(courierError.code),
            retry(index, in: session, because: message, after: nil, from: courierError.resumeData)
        {
            return
        }
        if let resumeData = courierError?.resumeData {
            switch partials.save(resumeData: resumeData, name: plan.name) {
            case .saved(let bytes):
                let kept = bytes.map { " (\(Formatting.bytes($0)))" } ?? ""
                message += "\n  kept \(FileNaming.partialName(for: plan.name))\(kept); run again with --continue"
                finish(index, phase: .failed, report: .failed(index: index, message: message))
                return
            case .failed(let reason):
                message += "\n  could not keep the partial download: \(reason)"
            }
        }
        fail(index, message: message, madeFromResumeData: fromResumeData)
    }

    /// Reports a failure that kept nothing new. A task made from resume data took the partial file over, so the
    /// old `NAME.part.resume` is removed once its `NAME.part` is gone.
    private func fail(_ index: Int, message: String, madeFromResumeData: Bool) {
        let name = plans[index].name
        if madeFromResumeData && !FileSystem.entryExists(partials.partialURL(name)) {
            FileSystem.removeIfPresent(partials.resumeDataURL(name))
        }
        finish(index, phase: .failed, report: .failed(index: index, message: message))
    }

    // MARK: Helpers

    /// The sanitised file name `response` asks for in `Content-Disposition`, when names from there are used.
    private func suggestedName(_ response: URLResponse?) -> String? {
        guard usesContentDisposition,
            let header = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Disposition"),
            let raw = ContentDisposition.fileName(in: header)
        else {
            return nil
        }
        return FileNaming.sanitize(raw)
    }

    /// Moves the staging file of plan `index` to the output directory under `name` (the plan's name or the
    /// `Content-Disposition` one), or `name-N` when a file of that name exists and `--force` was not given.
    /// Names of other plans and of files saved earlier in the run are skipped, even with `--force`.
    private func place(_ location: URL, for index: Int, as name: String) -> Result<String, Failure> {
        FileSystem.applyDefaultPermissions(location)
        let planName = plans[index].name
        let taken = state.withLock { $0.claimed }
        var candidate = name
        var number = 0
        do {
            while true {
                if candidate == planName || !taken.contains(candidate) {
                    let destination = outputDirectory.appendingPathComponent(candidate)
                    if overwrite {
                        try FileSystem.replace(destination, with: location)
                        break
                    }
                    if try FileSystem.moveWithoutReplacing(location, to: destination) {
                        break
                    }
                }
                number += 1
                candidate = FileNaming.name(name, withSuffix: number)
            }
        } catch {
            return .failure(Failure(message: error.description))
        }
        state.withLock { _ = $0.claimed.insert(candidate) }
        return .success(candidate)
    }

    /// Tries plan `index` again (from `resumeData` when there is some) after the rule's delay, unless its retries are
    /// used up. Returns whether it will.
    private func retry(
        _ index: Int,
        in session: Session,
        because reason: String,
        after serverDelay: Duration?,
        from resumeData: Data?
    ) -> Bool {
        let attempt = state.withLock { state -> Int? in
            let made = state.retriesMade[index, default: 0]
            guard made < retries, !state.interrupted.contains(index) else {
                return nil
            }
            state.retriesMade[index] = made + 1
            state.waitingToRetry[index] = resumeData
            return made + 1
        }
        guard let attempt else {
            return false
        }
        let delay = serverDelay ?? RetryRule.delay(beforeAttempt: attempt)
        let plan = plans[index]
        state.withLock { state in
            state.transfers[index].phase = .waiting
            state.reports.append(
                .warning(
                    "\(plan.url.absoluteString): \(reason); trying again in \(Formatting.seconds(delay.inSeconds)) "
                        + "(\(attempt) of \(retries))"
                )
            )
        }
        events.yield(.changed)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.inSeconds) { [self] in
            // Still waiting: not taken by an interrupt meanwhile.
            guard let resumeData = state.withLock({ $0.waitingToRetry.removeValue(forKey: index) }) else {
                return
            }
            start(plan, in: session, fromResumeData: resumeData)
        }
        return true
    }

    /// Keeps `data` as plan `index`'s partial download (`NAME.part.resume`), and says so.
    private func keep(_ data: Data, for index: Int) {
        let name = plans[index].name
        let report: Report
        switch partials.save(resumeData: data, name: name) {
        case .saved(let bytes):
            let kept = bytes.map { " (\(Formatting.bytes($0)))" } ?? ""
            report = .notice("kept \(FileNaming.partialName(for: name))\(kept)")
        case .failed(let reason):
            report = .warning("\(name): could not keep the partial download: \(reason)")
        }
        state.withLock { $0.reports.append(report) }
    }

    private func resumeDataArrived(_ data: Data?, for index: Int, from task: DownloadTask) {
        if let data {
            keep(data, for: index)
        } else if task.countOfBytesReceived > 0 {
            let reason = Self.whyNotResumable(task.response as? HTTPURLResponse)
            let report = Report.notice("\(plans[index].name): nothing kept: \(reason)")
            state.withLock { $0.reports.append(report) }
        }
        let done = state.withLock { state -> Bool in
            state.awaitingResumeData.remove(index)
            return state.taskCompleted.contains(index) && !state.transfers[index].isFinished
        }
        if done {
            finishInterrupted(index)
        }
        events.yield(.changed)
    }

    /// Why a stopped download gave no resume data, from what its response said (a server without a validator, as
    /// `python3 -m http.server` is, or an encoded body); `docs/resume-data.md` has the rules.
    static func whyNotResumable(_ response: HTTPURLResponse?) -> String {
        guard let response else {
            return "no response yet"
        }
        if let coding = response.value(forHTTPHeaderField: "Content-Encoding"), coding.lowercased() != "identity" {
            return "the body came encoded (Content-Encoding: \(coding)), which cannot be resumed"
        }
        if response.statusCode != 206,
            response.value(forHTTPHeaderField: "Accept-Ranges")?.lowercased().contains("bytes") != true
        {
            return "the server does not say it serves byte ranges (Accept-Ranges: bytes), so it cannot be resumed"
        }
        let etag = response.value(forHTTPHeaderField: "ETag")
        if etag == nil || etag?.hasPrefix("W/") == true {
            if response.value(forHTTPHeaderField: "Last-Modified") == nil {
                return "the server sent no strong ETag or Last-Modified, so a resumed download could not be checked"
            }
            return "the server sent no strong ETag, and its Last-Modified is too recent to check a resumed download by"
        }
        return "the server's response cannot be resumed"
    }

    private func finishInterrupted(_ index: Int) {
        finish(index, phase: .interrupted, report: nil)
    }

    private func finish(_ index: Int, phase: TransferProgress.Phase, savedAs: String? = nil, report: Report?) {
        let now = ContinuousClock.now
        let finished = state.withLock { state -> Bool in
            guard !state.transfers[index].isFinished else {
                return false
            }
            state.transfers[index].phase = phase
            state.transfers[index].endedAt = now
            state.transfers[index].savedAs = savedAs
            state.tasks[index] = nil
            state.remaining -= 1
            state.lastEndedAt = now
            if let report {
                state.reports.append(report)
            }
            return true
        }
        if finished, let onComplete, phase != .interrupted {
            var failure: String?
            if case .failed(_, let message)? = report {
                failure = message
            }
            let outcome = CompletionHook.Outcome(
                file: savedAs.map { outputDirectory.appendingPathComponent($0).path },
                url: plans[index].url.absoluteString,
                error: failure,
                httpStatus: state.withLock { $0.httpStatuses[index] }
            )
            CompletionHook.run(onComplete, for: outcome)
        }
        events.yield(.changed)
    }
}
