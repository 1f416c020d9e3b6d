import Courier
import CourierDaemon
import Foundation
import Testing

/// courierd's task machine on a virtual clock: every input with its time, every action checked, the odd orders too.
@Suite("courierd's task machine")
struct BackgroundTaskMachineTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let url = URL(string: "http://127.0.0.1:8080/episode.mp3")!

    static var rules: BackgroundTaskMachine.Rules {
        var settings = TransferSettings()
        settings.retryPolicy = RetryPolicy(initialDelay: 30)
        settings.checkpointInterval = 1
        settings.checkpointBytes = 1 << 20
        settings.conditionPollInterval = 10
        return BackgroundTaskMachine.Rules(settings)
    }

    static func task(_ kind: TransferSpec.TaskDetails.Kind = .download) -> JournaledTask {
        JournaledTask(
            session: "com.example.podcasts",
            spec: IPCMessage.BackgroundTask(identifier: 7, kind: kind, request: TaskRequest(url: url)),
            state: .waiting,
            bytesOnDisk: 0,
            expectedLength: -1,
            createdAt: start
        )
    }

    /// A machine whose first attempt is running, at `start`.
    static func running(_ kind: TransferSpec.TaskDetails.Kind = .download) -> BackgroundTaskMachine {
        var machine = BackgroundTaskMachine(adding: task(kind), rules: rules)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: start)
        _ = machine.attemptMade(stopping: false, now: start)
        return machine
    }

    static func response(_ status: Int, _ fields: [(String, String)]) -> IPCMessage.BackgroundResponse {
        IPCMessage.BackgroundResponse(
            url: url.absoluteString,
            head: ResponseHead(status: status, fieldLines: fields.map { .init(name: $0.0, value: $0.1) })
        )
    }

    static let timedOut = CourierError(.timedOut, "the request timed out")

    /// The actions of a download that finished whole (`length` bytes), reported as `entity`.
    static func finished(
        as entity: IPCMessage.BackgroundResponse,
        at length: Int64,
        expected: Int64
    ) -> [BackgroundTaskAction] {
        // No progress event first, even for bytes the machine had not heard of: the completion carries them.
        let whole = TransferProgress(received: length, expectedToReceive: expected)
        let leading = IPCMessage.BackgroundEvent.response(entity, requested: url.absoluteString, progress: whole)
        return [
            .finishDownload(
                leading: leading,
                completion: .completed(nil, whole, response: entity),
                length: length
            )
        ]
    }

    @Test("a new task starts at once: the attempt is made, then runs")
    func starts() {
        var machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        #expect(machine.launch(conditionsWait: nil, stopping: false, now: Self.start) == [.makeAttempt(Self.task())])
        #expect(machine.phase == .starting)
        // A second look while it starts starts nothing more.
        #expect(machine.launch(conditionsWait: nil, stopping: false, now: Self.start).isEmpty)
        #expect(machine.attemptMade(stopping: false, now: Self.start) == [.runAttempt])
        #expect(machine.phase == .running)
    }

    @Test("what a task waits for: its relaunch delay, a retry, the conditions; each says why and when to look again")
    func waits() {
        var delayed = Self.task()
        delayed.spec.startAfter = Self.start.addingTimeInterval(60)
        var machine = BackgroundTaskMachine(adding: delayed, rules: Self.rules)
        #expect(
            machine.launch(conditionsWait: nil, stopping: false, now: Self.start) == [
                .wake(at: delayed.spec.startAfter!)
            ]
        )
        #expect(machine.waitingReason?.hasPrefix("created in the background") == true)

        machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        let reason = "waiting for external power"
        #expect(
            machine.launch(conditionsWait: reason, stopping: false, now: Self.start)
                == [.wake(at: Self.start.addingTimeInterval(10))]
        )
        #expect(machine.waitingReason == reason)
        #expect(machine.launch(conditionsWait: nil, stopping: true, now: Self.start).isEmpty, "courierd is stopping")
        #expect(machine.launch(conditionsWait: nil, stopping: false, now: Self.start) == [.makeAttempt(Self.task())])
        #expect(machine.waitingReason == nil)
    }

    @Test("earliestBeginDate: waits until then; asks a listening app (30 s at most), begins at once with none")
    func delayedStart() throws {
        var delayed = Self.task()
        let begin = Self.start.addingTimeInterval(3600)
        delayed.spec.spec.task?.earliestBeginDate = begin
        var machine = BackgroundTaskMachine(adding: delayed, rules: Self.rules)
        #expect(machine.launch(conditionsWait: nil, appListening: true, stopping: false, now: Self.start) == [
            .wake(at: begin)
        ])
        #expect(machine.waitingReason?.hasPrefix("scheduled: begins no earlier than") == true)

        // The date passed with the app there: it is asked, and nothing else happens until it answers.
        let asking = machine.launch(conditionsWait: nil, appListening: true, stopping: false, now: begin)
        #expect(asking.count == 2)
        #expect(asking.first == .record(IPCMessage.BackgroundEvent(.delayedStart, progress: TransferProgress())))
        #expect(asking.last == .wake(at: begin.addingTimeInterval(BackgroundTaskMachine.delayedStartAnswerTime)))
        #expect(machine.launch(conditionsWait: nil, appListening: true, stopping: false, now: begin.addingTimeInterval(5))
            == [.wake(at: begin.addingTimeInterval(BackgroundTaskMachine.delayedStartAnswerTime))])
        // The answer: a new request, journaled, then the launch.
        let other = TaskRequest(url: URL(string: "http://127.0.0.1:8080/other.mp3")!, method: "GET", headerFields: [:])
        let answered = try machine.command(.beginDelayed, newRequest: other).get()
        var rewritten = delayed.spec
        rewritten.beginDelayed(with: other)
        #expect(answered == [.rewriteTask(rewritten), .launch])
        #expect(machine.journaled.spec.request.url == other.url && machine.journaled.spec.earliestBeginDate == nil)
        #expect(machine.launch(conditionsWait: nil, stopping: false, now: begin).first.map {
            if case .makeAttempt = $0 { true } else { false }
        } == true)
        // A second answer is refused: nothing waits for one.
        #expect((try? machine.command(.beginDelayed).get()) == nil)

        // No app holds the session: it begins as it is, asking nobody.
        machine = BackgroundTaskMachine(adding: delayed, rules: Self.rules)
        var unchanged = delayed.spec
        unchanged.beginDelayed(with: nil)
        #expect(machine.launch(conditionsWait: nil, appListening: false, stopping: false, now: begin) == [
            .rewriteTask(unchanged), .launch,
        ])
        // An app that does not answer: it begins as it is after 30 s.
        machine = BackgroundTaskMachine(adding: delayed, rules: Self.rules)
        _ = machine.launch(conditionsWait: nil, appListening: true, stopping: false, now: begin)
        let late = begin.addingTimeInterval(BackgroundTaskMachine.delayedStartAnswerTime)
        #expect(machine.launch(conditionsWait: nil, appListening: true, stopping: false, now: late) == [
            .rewriteTask(unchanged), .launch,
        ])
    }

    @Test("attempts ready together start by priority, then by the size the app declared, then oldest first")
    func startOrder() {
        func task(_ identifier: Int, priority: Float = 0.5, expects bytes: Int64? = nil) -> JournaledTask {
            var journaled = Self.task()
            journaled.spec.identifier = identifier
            journaled.spec.spec.task?.priority = priority
            journaled.spec.spec.task?.countOfBytesClientExpectsToReceive = bytes
            return journaled
        }
        let tasks = [
            task(1, expects: 50 << 20), task(2), task(3, expects: 10 << 10), task(4, priority: 0.9),
            task(5, expects: 10 << 10), task(6, priority: 0.1, expects: 1),
        ]
        #expect(tasks.sorted(by: StartOrder.startsBefore).map(\.identifier) == [4, 3, 5, 1, 2, 6])
    }

    @Test("progress: the first bytes are checkpointed at once, then every second or MiB, with what the app missed")
    func checkpoints() {
        var machine = Self.running()
        guard
            case .checkpoint(let first, let progress)? = machine.progressed(
                received: 100,
                expectedToReceive: 5000,
                now: Self.start
            ).first
        else {
            Issue.record("no checkpoint for the first bytes")
            return
        }
        #expect(progress == .wrote(100, of: 5000))
        machine.checkpointed(first, reportingProgress: true)
        #expect(machine.progressed(received: 200, now: Self.start.addingTimeInterval(0.5)).isEmpty)
        let later = machine.progressed(received: 300, now: Self.start.addingTimeInterval(1.1))
        #expect(later.count == 1)
        if case .checkpoint(let checkpoint, let progress)? = later.first {
            #expect(checkpoint.received == 300)
            #expect(progress == .wrote(300, of: 5000))
        }
    }

    @Test("a network failure is retried after the backoff from where the bytes got; the wait says when")
    func retries() {
        var machine = Self.running()
        let actions = machine.attemptFailed(Self.timedOut, response: nil, resourceTimeout: 3600, now: Self.start)
        let at = Self.start.addingTimeInterval(30)
        #expect(actions.count == 2)
        if case .keepForNextAttempt(_, _, let retry)? = actions.first {
            #expect(retry == .init(attempts: 1, at: at))
        }
        #expect(actions.last == .launch)
        #expect(machine.phase == .waiting)
        #expect(
            machine.launch(conditionsWait: nil, stopping: false, now: Self.start.addingTimeInterval(1)) == [
                .wake(at: at)
            ]
        )
        #expect(machine.waitingReason?.hasPrefix("retrying at") == true)
        #expect(machine.launch(conditionsWait: nil, stopping: false, now: at).count == 1)
    }

    @Test("retries end at the resource timeout, with timedOut; a failure that is not the network's ends at once")
    func retriesEnd() {
        var machine = Self.running()
        let actions = machine.attemptFailed(Self.timedOut, response: nil, resourceTimeout: 10, now: Self.start)
        guard case .finish(let events)? = actions.first, case .some(let error)? = events.last?.endingError else {
            Issue.record("not finished: \(actions)")
            return
        }
        #expect(error.code == .timedOut)
        #expect(machine.phase == .finished)

        machine = Self.running()
        let refused = machine.attemptFailed(
            CourierError(.badURL, "no"),
            response: nil,
            resourceTimeout: 3600,
            now: Self.start
        )
        #expect(refused == [.finish([.completed(CourierError(.badURL, "no"))])])
    }

    @Test("cancel racing a retry, both orders: the task ends cancelled, never waits forever")
    func cancelRacingRetry() {
        // The retry first, then the cancel while it waits.
        var machine = Self.running()
        _ = machine.attemptFailed(Self.timedOut, response: nil, resourceTimeout: 3600, now: Self.start)
        let cancelled = try? machine.command(.cancel).get()
        #expect(cancelled == [.finish([.completed(CourierError(.cancelled, "cancelled"))])])
        #expect(machine.phase == .finished)

        // The cancel first: the attempt's failure (a time-out racing the cancel) ends it, no retry.
        machine = Self.running()
        #expect((try? machine.command(.cancel).get()) == [.cancelAttempt(keepingResumeData: false)])
        let ended = machine.attemptFailed(Self.timedOut, response: nil, resourceTimeout: 3600, now: Self.start)
        guard case .finish(let events)? = ended.first, case .some(let error)? = events.last?.endingError else {
            Issue.record("not finished: \(ended)")
            return
        }
        #expect(error.code == .cancelled)
        // A command for a finished task is refused.
        #expect((try? machine.command(.resume).get()) == nil)
    }

    @Test("cancelled or stopping while its attempt is being made: the attempt is discarded")
    func cancelWhileStarting() {
        var machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: Self.start)
        #expect((try? machine.command(.cancel).get()) == [])
        #expect(
            machine.attemptMade(stopping: false, now: Self.start)
                == [.discardAttempt, .finish([.completed(CourierError(.cancelled, "cancelled"))])]
        )

        machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: Self.start)
        #expect(machine.attemptMade(stopping: true, now: Self.start) == [.discardAttempt])
        #expect(machine.phase == .waiting)
    }

    @Test("suspended while its attempt is made: it runs suspended; suspend then resume 1,000 times leaves it running")
    func suspendResume() {
        var machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: Self.start)
        #expect((try? machine.command(.suspend).get()) == [.journalState(.suspended)])
        #expect(
            machine.attemptMade(stopping: false, now: Self.start)
                == [.runAttempt, .suspendAttempt, .journalState(.suspended)]
        )
        var last: [BackgroundTaskAction] = []
        for _ in 0..<1000 {
            _ = try? machine.command(.suspend).get()
            last = (try? machine.command(.resume).get()) ?? []
        }
        #expect(last == [.resumeAttempt, .journalState(.running)])
        #expect(!machine.userSuspended)
        #expect(machine.phase == .running)
        // Resumed while waiting (not running): journaled as waiting, so that a restart does not bring it back
        // suspended.
        machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        _ = try? machine.command(.suspend).get()
        #expect(machine.launch(conditionsWait: nil, stopping: false, now: Self.start).isEmpty)
        #expect((try? machine.command(.resume).get()) == [.journalState(.waiting), .launch])
    }

    @Test("courierd stops: the attempt is cut keeping its partial file, and the task waits for the next start")
    func stops() {
        var machine = Self.running()
        #expect(machine.stop() == [.cancelAttempt(keepingResumeData: true)])
        var cut = CourierError(.cancelled, "cancelled")
        cut.resumeData = Data("resume".utf8)
        let kept = machine.attemptFailed(cut, response: nil, resourceTimeout: 3600, now: Self.start)
        guard case .keepForNextAttempt(_, let resumeData, let retry)? = kept.first else {
            Issue.record("not kept: \(kept)")
            return
        }
        #expect(resumeData == Data("resume".utf8))
        #expect(retry == nil)
        #expect(kept.count == 1)
        #expect(machine.phase == .waiting)
        #expect(machine.launch(conditionsWait: nil, stopping: true, now: Self.start).isEmpty)
    }

    @Test("killed between the last byte and the journal: restored, its 416 for a whole file finishes it as the 200")
    func wholeFileAfterKill() {
        let first = Self.response(200, [("ETag", "\"v1\""), ("Content-Length", "5000")])
        var restored = Self.task()
        restored.state = .running
        restored.bytesOnDisk = 5000
        restored.expectedLength = 5000
        restored.checkpoint = TransferCheckpoint(
            received: 5000,
            expectedToReceive: 5000,
            boot: nil,
            at: Self.start,
            entity: first
        )
        var machine = BackgroundTaskMachine(restoring: restored, rules: Self.rules)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: Self.start)
        _ = machine.attemptMade(stopping: false, now: Self.start)
        let refused = Self.response(416, [("Content-Range", "bytes */5000")])
        #expect(
            machine.downloadFinished(response: refused, length: 5000)
                == Self.finished(as: first, at: 5000, expected: 5000)
        )
    }

    @Test("a 206 of a resumed attempt is reported as the first attempt's 200, remembered across the retry")
    func rangeAfterRetry() {
        let first = Self.response(200, [("ETag", "\"v1\""), ("Content-Length", "5000")])
        var machine = Self.running()
        let failed = machine.attemptFailed(Self.timedOut, response: first, resourceTimeout: 3600, now: Self.start)
        guard case .keepForNextAttempt(let next, _, _)? = failed.first else {
            Issue.record("not kept: \(failed)")
            return
        }
        #expect(next.entity == first)
        machine.kept(next)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: Self.start.addingTimeInterval(30))
        _ = machine.attemptMade(stopping: false, now: Self.start.addingTimeInterval(30))
        let range = Self.response(206, [("Content-Range", "bytes 2000-4999/5000"), ("Content-Length", "3000")])
        #expect(
            machine.downloadFinished(response: range, length: 5000) == Self.finished(as: first, at: 5000, expected: -1)
        )
    }

    @Test("invalidateAndCancel or a force-quit: the task ends at once, its running attempt is cancelled")
    func cancelAll() {
        var machine = Self.running()
        let error = CourierError(.cancelled, "the session was invalidated")
        #expect(
            machine.cancelAll(error) == [.finish([.completed(error)]), .cancelAttempt(keepingResumeData: false)]
        )
        #expect(machine.cancelAll(error).isEmpty)
        #expect(machine.attemptFailed(Self.timedOut, response: nil, resourceTimeout: 3600, now: Self.start).isEmpty)
        // While its attempt is being made: the attempt is discarded, and its arrival changes nothing.
        machine = BackgroundTaskMachine(adding: Self.task(), rules: Self.rules)
        _ = machine.launch(conditionsWait: nil, stopping: false, now: Self.start)
        #expect(machine.cancelAll(error) == [.finish([.completed(error)]), .discardAttempt])
        #expect(machine.attemptMade(stopping: false, now: Self.start) == [.discardAttempt])
    }

    @Test("an upload that succeeded: its progress, response and body, then its completion")
    func uploadFinished() {
        var machine = Self.running(.upload)
        _ = machine.progressed(sent: 10, expectedToSend: 10, now: Self.start)
        let response = Self.response(201, [])
        let sent = TransferProgress(sent: 10, expectedToSend: 10)
        #expect(
            machine.uploadFinished(response: response, body: Data("{}".utf8))
                == [
                    .finish(
                        [IPCMessage.BackgroundEvent(.progress, progress: sent)]
                            + IPCMessage.BackgroundEvent.response(response, requested: Self.url.absoluteString, progress: sent) + [
                                IPCMessage.BackgroundEvent(.data(Data("{}".utf8)), progress: sent),
                                .completed(nil, sent, response: response),
                            ]
                    )
                ]
        )
    }
}
