import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TaskMachine: resume, suspend, backpressure, cancel, start and abandon")
struct LifecycleTransitionTests {
    typealias D = MachineDriver

    // MARK: Resume and start

    @Test("the first resume starts the task and sets startDate; a second resume does nothing")
    func firstResumeStarts() {
        var d = D.collecting()
        #expect(d.machine.phase == .created)
        #expect(d.machine.startDate == nil)
        #expect(d.apply(.resume) == [.start])
        #expect(d.machine.phase == .running)
        #expect(d.machine.startDate == D.epoch)
        d.advance(by: 5)
        #expect(d.apply(.resume) == [])
        #expect(d.machine.startDate == D.epoch)
        #expect(d.machine.hop == 0)
    }

    @Test("started submits hop 1 with the request, priority and deadline; submitted adopts the transfer")
    func startedSubmitsHopOne() {
        var d = D.collecting()
        d.machine.priority = 0.75
        #expect(d.apply(.resume) == [.start])
        d.advance(by: 2)
        let deadline = d.now.addingTimeInterval(30)
        let actions = d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: deadline))
        let plan = HopPlan(
            hop: 1,
            request: TaskRequest(D.request(D.url)),
            resumeOffset: 0,
            authentication: .none,
            priority: 0.75,
            resourceDeadline: deadline,
            staging: nil,
            resume: nil,
            collectsBody: true
        )
        #expect(actions == [.submit(plan)])
        #expect(d.machine.hop == 1)
        #expect(d.machine.transfer == 0)
        #expect(d.machine.hops.count == 1)
        #expect(d.machine.hops.first?.start == D.epoch.addingTimeInterval(2))
        #expect(d.machine.resourceDeadline == deadline)

        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [])
        #expect(d.machine.transfer == 101)
        // A second `.started` (or a repeated `.submitted`) changes nothing.
        #expect(d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: deadline)) == [])
        #expect(d.apply(.submitted(hop: 1, transfer: 999)) == [])
        #expect(d.machine.transfer == 101)
        #expect(d.machine.hop == 1)
    }

    @Test("a download's started hands the staging file to hop 1's plan")
    func downloadStagingInPlan() {
        var d = D.download()
        let actions = d.start()
        #expect(actions == [.submit(d.plan(hop: 1, D.request(D.url)))])
        #expect(d.machine.staging == D.stagingFile)
        guard case .submit(let plan)? = actions.first else {
            Issue.record("no submit")
            return
        }
        #expect(plan.staging == D.stagingFile)
        #expect(plan.resume == nil)
    }

    @Test("started for a hop that is already submitted, or before resume, is ignored")
    func startedOutOfOrder() {
        var d = D.collecting()
        let deadline = D.epoch.addingTimeInterval(60)
        #expect(d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: deadline)) == [])
        #expect(d.machine.phase == .created)
        #expect(d.machine.hop == 0)
    }

    // MARK: Suspend and resume

    @Test("suspend and resume once the transfer is known pause and resume it, once each")
    func suspendAfterAdopt() {
        var d = D.collecting()
        d.start()
        #expect(d.apply(.suspend) == [.pauseTransfer(101)])
        #expect(d.machine.publicState == .suspended)
        #expect(d.apply(.suspend) == [])
        #expect(d.apply(.resume) == [.resumeTransfer(101)])
        #expect(d.machine.publicState == .running)
        #expect(d.apply(.resume) == [])
    }

    @Test("a suspend before the transfer id is known is applied when the submit's answer adopts it")
    func suspendBeforeAdopt() {
        var d = D.collecting()
        d.start(adopt: false)
        #expect(d.apply(.suspend) == [])
        #expect(d.machine.publicState == .suspended)
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [.pauseTransfer(101)])
        #expect(d.machine.enginePaused)
        #expect(d.apply(.resume) == [.resumeTransfer(101)])
        #expect(!d.machine.enginePaused)
    }

    @Test("a suspend between start and started is applied when the hop's first event adopts the transfer")
    func suspendBeforeStartedAdoptedByEvent() {
        var d = D.collecting()
        #expect(d.apply(.resume) == [.start])
        #expect(d.apply(.suspend) == [])
        d.deadline = d.now.addingTimeInterval(60)
        #expect(
            d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: d.deadline))
                == [.submit(d.plan(hop: 1, D.request(D.url)))]
        )
        #expect(d.progress(TransferProgress(received: 0)) == [.pauseTransfer(101)])
        // The submit's answer, coming after the event, changes nothing.
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [])
        #expect(d.apply(.resume) == [.resumeTransfer(101)])
    }

    @Test("suspended and resumed before the id is known: nothing to apply on adopt")
    func suspendResumeBeforeAdopt() {
        var d = D.collecting()
        d.start(adopt: false)
        #expect(d.apply(.suspend) == [])
        #expect(d.apply(.resume) == [])
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [])
        #expect(d.machine.publicState == .running)
    }

    @Test("suspend before the first resume does nothing: the task is suspended until resume starts it")
    func suspendNeverResumed() {
        var d = D.collecting()
        #expect(d.apply(.suspend) == [])
        #expect(d.machine.publicState == .suspended)
        #expect(!d.machine.userSuspended)
        #expect(d.apply(.resume) == [.start])
        #expect(d.machine.publicState == .running)
    }

    @Test("backpressure and a user suspension combine: the transfer moves only when neither holds it")
    func backpressureAndSuspension() {
        var d = D.streaming()
        d.start()
        #expect(d.apply(.backpressure(true)) == [.pauseTransfer(101)])
        // Backpressure is not a suspension the user sees.
        #expect(d.machine.publicState == .running)
        #expect(d.apply(.backpressure(true)) == [])
        #expect(d.apply(.suspend) == [])
        #expect(d.machine.publicState == .suspended)
        #expect(d.apply(.backpressure(false)) == [])
        #expect(d.apply(.resume) == [.resumeTransfer(101)])

        #expect(d.apply(.suspend) == [.pauseTransfer(101)])
        #expect(d.apply(.backpressure(true)) == [])
        #expect(d.apply(.resume) == [])
        #expect(d.machine.publicState == .running)
        #expect(d.apply(.backpressure(false)) == [.resumeTransfer(101)])
        #expect(d.apply(.backpressure(false)) == [])
    }

    @Test("backpressure before the transfer id is known is applied on adopt")
    func backpressureBeforeAdopt() {
        var d = D.streaming()
        d.start(adopt: false)
        #expect(d.apply(.backpressure(true)) == [])
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [.pauseTransfer(101)])
        #expect(d.apply(.backpressure(false)) == [.resumeTransfer(101)])
    }

    @Test("a suspension outlives a redirect: the next hop's transfer is paused when adopted")
    func suspensionAcrossHops() {
        var d = D.collecting()
        d.start()
        #expect(d.apply(.suspend) == [.pauseTransfer(101)])
        let asked = d.respond(D.head(302, ["Location": "/next"]), held: true)
        guard case .ask(.redirect(1, _, let proposed))? = asked.last else {
            Issue.record("no redirect question: \(asked)")
            return
        }
        #expect(
            d.apply(.redirectAnswered(hop: 1, proposed))
                == [.cancelTransfer(101), .submit(d.plan(hop: 2, D.request("https://a.example/next")))]
        )
        #expect(!d.machine.enginePaused)
        #expect(d.apply(.submitted(hop: 2, transfer: 102)) == [.pauseTransfer(102)])
        #expect(d.apply(.resume) == [.resumeTransfer(102)])
    }

    // MARK: Cancel

    @Test("cancel before resume finishes cancelled at once; a later resume does nothing")
    func cancelBeforeResume() {
        var d = D.collecting()
        #expect(d.apply(.cancel) == [.finish(D.cancelled(D.url))])
        #expect(d.machine.phase == .completed)
        #expect(d.machine.publicState == .completed)
        #expect(d.apply(.resume) == [])
        #expect(d.apply(.cancel) == [])
        #expect(d.machine.startDate == nil)
        #expect(d.machine.hop == 0)
    }

    @Test("cancel while running cancels the transfer once; its cancelled COMPLETE finishes cancelled")
    func cancelRunning() {
        var d = D.collecting()
        d.start()
        #expect(d.apply(.cancel) == [.cancelTransfer(101)])
        #expect(d.machine.publicState == .canceling)
        #expect(d.apply(.cancel) == [])
        // No pause or resume for a cancelled transfer.
        #expect(d.apply(.suspend) == [])
        #expect(d.apply(.resume) == [])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
        #expect(d.machine.publicState == .completed)
    }

    @Test("cancel before the transfer id is known cancels it on adopt, once")
    func cancelBeforeAdopt() {
        var d = D.collecting()
        d.start(adopt: false)
        #expect(d.apply(.cancel) == [])
        #expect(d.machine.publicState == .canceling)
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [.cancelTransfer(101)])
        #expect(d.progress(TransferProgress(received: 10)) == [])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
    }

    @Test("cancel before the id is known, the id learned from the hop's first event: cancelled then, not again")
    func cancelBeforeAdoptByEvent() {
        var d = D.collecting()
        d.start(adopt: false)
        #expect(d.apply(.cancel) == [])
        #expect(d.progress(TransferProgress(received: 3)) == [.cancelTransfer(101)])
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
    }

    @Test("cancel between start and started finishes cancelled without submitting")
    func cancelBetweenStartAndStarted() {
        var d = D.collecting()
        #expect(d.apply(.resume) == [.start])
        #expect(d.apply(.cancel) == [])
        #expect(d.machine.publicState == .canceling)
        let actions = d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: d.now.addingTimeInterval(60)))
        #expect(actions == [.finish(D.cancelled(D.url))])
        #expect(d.machine.hop == 0)
        #expect(d.machine.hops.isEmpty)
        #expect(d.machine.publicState == .completed)
    }

    @Test("a suspended task cancelled: canceling, no resume of the transfer, finishes cancelled")
    func cancelSuspended() {
        var d = D.collecting()
        d.start()
        #expect(d.apply(.suspend) == [.pauseTransfer(101)])
        #expect(d.apply(.cancel) == [.cancelTransfer(101)])
        #expect(d.machine.publicState == .canceling)
        #expect(d.apply(.resume) == [])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
    }

    // MARK: publicState

    @Test("publicState in every phase: created, running, suspended, canceling, finishing, completed")
    func publicStateEveryPhase() {
        var d = D.collecting()
        #expect(d.machine.publicState == .suspended)
        #expect(d.apply(.resume) == [.start])
        #expect(d.machine.publicState == .running)
        d.deadline = d.now.addingTimeInterval(60)
        #expect(
            d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: d.deadline))
                == [.submit(d.plan(hop: 1, D.request(D.url)))]
        )
        #expect(d.machine.publicState == .running)
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [])
        #expect(d.apply(.suspend) == [.pauseTransfer(101)])
        #expect(d.machine.publicState == .suspended)
        #expect(d.apply(.resume) == [.resumeTransfer(101)])
        #expect(d.machine.publicState == .running)

        // Finishing: the current hop completed, a retired one has not.
        d.followRedirect(hop: 1, to: "/two")
        d.respond(hop: 2, D.head(200), held: false)
        #expect(d.complete(hop: 2, .success()) == [])
        #expect(d.machine.phase == .finishing)
        #expect(d.machine.publicState == .running)
        // A cancel while finishing changes nothing: the outcome is decided.
        #expect(d.apply(.cancel) == [])
        #expect(d.machine.publicState == .running)
        #expect(d.complete(hop: 1, .cancelled()) == [.finish(.success)])
        #expect(d.machine.publicState == .completed)
    }

    @Test("publicState while finishing after a cancel is canceling")
    func publicStateFinishingCancelled() {
        var d = D.collecting()
        d.start()
        d.followRedirect(hop: 1, to: "/two")
        #expect(d.apply(.cancel) == [.cancelTransfer(102)])
        #expect(d.complete(hop: 2, .cancelled()) == [])
        #expect(d.machine.phase == .finishing)
        #expect(d.machine.publicState == .canceling)
        #expect(d.complete(hop: 1, .cancelled()) == [.finish(D.cancelled("https://a.example/two"))])
        #expect(d.machine.publicState == .completed)
    }

    // MARK: Failures of the shell's actions

    @Test("failed (the answer to start) finishes with its error; nothing is submitted afterwards")
    func failedFinishes() {
        var d = D.collecting()
        #expect(d.apply(.resume) == [.start])
        let error = CourierError(.sessionInvalidated, "the session was invalidated", failingURL: URL(string: D.url))
        #expect(d.apply(.failed(error)) == [.finish(.failure(error))])
        #expect(d.machine.publicState == .completed)
        #expect(d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: nil)) == [])
        #expect(d.apply(.failed(error)) == [])
    }

    @Test("submitFailed finishes with that error; one for another hop is ignored")
    func submitFailedFinishes() {
        var d = D.collecting()
        d.start(adopt: false)
        let error = CourierError(.cannotOpenFile, "no such upload file")
        #expect(d.apply(.submitFailed(hop: 2, error)) == [])
        #expect(d.apply(.submitFailed(hop: 0, error)) == [])
        #expect(d.machine.phase == .running)
        #expect(d.apply(.submitFailed(hop: 1, error)) == [.finish(.failure(error))])
        #expect(d.machine.transfer == 0)
        #expect(d.machine.publicState == .completed)
        #expect(d.apply(.submitFailed(hop: 1, error)) == [])
    }

    @Test("submitFailed of a redirect's hop waits for the retired hop's COMPLETE")
    func submitFailedAfterRedirect() {
        var d = D.collecting()
        d.start()
        let asked = d.respond(D.head(307, ["Location": "/two"]), held: true)
        guard case .ask(.redirect(1, _, let proposed))? = asked.last else {
            Issue.record("no redirect question: \(asked)")
            return
        }
        d.apply(.redirectAnswered(hop: 1, proposed))
        let error = CourierError(.unsupportedURL, "the backend refused the URL")
        #expect(d.apply(.submitFailed(hop: 2, error)) == [])
        #expect(d.machine.phase == .finishing)
        #expect(d.complete(hop: 1, .cancelled()) == [.finish(.failure(error))])
    }

    // MARK: Abandon

    @Test("abandon finishes cancelled exactly once, while a question is open, and ignores what follows")
    func abandonOnce() {
        var d = D.collecting()
        d.start()
        let asked = d.respond(D.head(302, ["Location": "/next"]), held: true)
        guard case .ask(.redirect(1, _, let proposed))? = asked.last else {
            Issue.record("no redirect question: \(asked)")
            return
        }
        let released = CourierError(.cancelled, "the session was released", failingURL: URL(string: D.url))
        #expect(d.apply(.abandon) == [.finish(.failure(released))])
        #expect(d.machine.publicState == .completed)
        #expect(d.apply(.abandon) == [])
        #expect(d.apply(.redirectAnswered(hop: 1, proposed)) == [])
        #expect(d.complete(.cancelled()) == [])
        #expect(d.apply(.cancel) == [])
    }

    @Test("abandon does not wait for retired hops")
    func abandonWithRetiredHop() {
        var d = D.collecting()
        d.start()
        d.followRedirect(hop: 1, to: "/two")
        #expect(d.machine.retiredHops == [1])
        let released = CourierError(
            .cancelled,
            "the session was released",
            failingURL: URL(string: "https://a.example/two")
        )
        #expect(d.apply(.abandon) == [.finish(.failure(released))])
        #expect(d.machine.retiredHops.isEmpty)
        #expect(d.complete(hop: 1, .cancelled()) == [])
        #expect(d.complete(hop: 2, .cancelled()) == [])
    }

    @Test("abandon of a task never resumed finishes it cancelled")
    func abandonNeverResumed() {
        var d = D.download()
        let released = CourierError(.cancelled, "the session was released", failingURL: URL(string: D.url))
        #expect(d.apply(.abandon) == [.finish(.failure(released))])
        #expect(d.apply(.resume) == [])
    }

    @Test("a task without a request fails badURL when started, submitting nothing")
    func noRequest() {
        let role = TaskMachine.Role(kind: .data, collectsBody: true, asksDisposition: false)
        var d = D(TaskMachine(role: role, request: nil))
        #expect(d.apply(.resume) == [.start])
        let error = CourierError(.badURL, "the request has no URL")
        #expect(d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: nil)) == [.finish(.failure(error))])
        #expect(d.machine.hops.isEmpty)
    }
}
