import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TaskMachine: completion, retired hops, deadlines and the final report")
struct CompletionTransitionTests {
    typealias D = MachineDriver

    /// Every input a finished task might still get.
    static func lateInputs() -> [TaskInput] {
        let error = CourierError(.networkConnectionLost, "late")
        let redirect = D.head(302, ["Location": "/x"])
        return [
            .event(hop: 1, D.event(hop: 1, .response(held: true, resumeOffset: 0, head: redirect))),
            .event(hop: 1, D.event(hop: 1, .data(Data("late".utf8)), progress: TransferProgress(received: 99))),
            .event(hop: 1, D.event(hop: 1, .progress, progress: TransferProgress(received: 99, sent: 5))),
            .event(hop: 1, D.event(hop: 1, .complete(.success()))),
            .event(hop: 1, D.event(hop: 1, .complete(.failure(.networkConnectionLost)))),
            .event(hop: 2, D.event(hop: 2, .complete(.success()))),
            .redirectAnswered(hop: 1, TaskRequest(D.request("https://a.example/x"))),
            .redirectAnswered(hop: 1, nil),
            .challengeAnswered(hop: 1, .credential(user: "u", password: "p")),
            .challengeAnswered(hop: 1, .cancel),
            .dispositionAnswered(hop: 1, .allow),
            .dispositionAnswered(hop: 1, .becomeDownload(staging: D.stagingFile)),
            .heldFailed(hop: 1, error),
            .submitted(hop: 1, transfer: 555),
            .submitted(hop: 2, transfer: 556),
            .submitFailed(hop: 1, error),
            .started(resumeOffset: 0, staging: nil, resourceDeadline: nil),
            .failed(error),
            .suspend,
            .resume,
            .backpressure(true),
            .backpressure(false),
            .cancel,
            .abandon,
        ]
    }

    @Test("exactly one finish, whatever arrives afterwards")
    func exactlyOneFinish() {
        var d = D.collecting()
        d.start()
        d.respond(D.head(200), held: false)
        #expect(d.complete(.success()) == [.finish(.success)])
        for input in Self.lateInputs() {
            #expect(d.apply(input) == [], "after the finish: \(input)")
        }
        #expect(d.machine.phase == .completed)
        #expect(d.machine.publicState == .completed)
        #expect(d.machine.hop == 1)
        #expect(d.machine.bodyChunks.isEmpty)
    }

    @Test("exactly one finish after a failure, too")
    func exactlyOneFinishAfterFailure() {
        var d = D.download()
        d.start()
        let outcome = TaskOutcome.failure(
            CourierError(.networkConnectionLost, "reset", failingURL: URL(string: D.url))
        )
        #expect(d.complete(.failure(.networkConnectionLost, "reset")) == [.finish(outcome)])
        var late: [TaskAction] = []
        for input in Self.lateInputs() {
            late += d.apply(input)
        }
        #expect(late == [])
    }

    @Test("a retired hop's COMPLETE after the current hop's: finishing, then the finish, with both hops' metrics")
    func retiredCompleteAfterCurrent() {
        var d = D.collecting()
        d.start()
        d.followRedirect(hop: 1, to: "/two")
        d.respond(hop: 2, D.head(200), held: false)
        #expect(d.complete(hop: 2, .success(metrics: D.metrics(2000))) == [])
        #expect(d.machine.phase == .finishing)
        #expect(d.machine.pendingOutcome == .success)
        #expect(d.machine.retiredHops == [1])
        // Events of the finished hop or of unknown hops change nothing.
        #expect(d.complete(hop: 2, .success()) == [])
        #expect(d.complete(hop: 5, .success()) == [])
        #expect(d.complete(hop: 1, .cancelled(metrics: D.metrics(1000))) == [.finish(.success)])
        #expect(d.machine.phase == .completed)
        #expect(d.machine.hops.map(\.metrics) == [D.metrics(1000), D.metrics(2000)])
        #expect(d.complete(hop: 1, .cancelled()) == [])
    }

    @Test("a retired hop's COMPLETE before the current hop's: the current COMPLETE finishes at once")
    func retiredCompleteBeforeCurrent() {
        var d = D.collecting()
        d.start()
        d.followRedirect(hop: 1, to: "/two")
        #expect(d.complete(hop: 1, .cancelled(metrics: D.metrics(1000))) == [])
        #expect(d.machine.phase == .running)
        #expect(d.machine.retiredHops.isEmpty)
        d.respond(hop: 2, D.head(200), held: false)
        #expect(d.complete(hop: 2, .success(metrics: D.metrics(2000))) == [.finish(.success)])
        #expect(d.machine.hops.map(\.metrics) == [D.metrics(1000), D.metrics(2000)])
    }

    @Test("several retired hops: the finish waits for the last of them, in any order")
    func severalRetiredHops() {
        var d = D.collecting()
        d.start()
        d.followRedirect(hop: 1, to: "/two")
        d.answerChallenge(hop: 2)
        d.followRedirect(hop: 3, to: "/four")
        #expect(d.machine.retiredHops == [1, 2, 3])
        d.respond(hop: 4, D.head(200), held: false)
        #expect(d.complete(hop: 4, .success(metrics: D.metrics(4))) == [])
        #expect(d.complete(hop: 2, .cancelled(metrics: D.metrics(2))) == [])
        #expect(d.complete(hop: 3, .cancelled(metrics: D.metrics(3))) == [])
        #expect(d.machine.phase == .finishing)
        #expect(d.complete(hop: 1, .cancelled(metrics: D.metrics(1))) == [.finish(.success)])
        #expect(d.machine.hops.map(\.metrics) == [D.metrics(1), D.metrics(2), D.metrics(3), D.metrics(4)])
    }

    @Test("a failure of the current hop also waits for the retired hop, and reports the current hop's URL")
    func failureWaitsForRetired() {
        var d = D.collecting()
        d.start()
        d.followRedirect(hop: 1, to: "https://b.example/end")
        #expect(d.complete(hop: 2, .failure(.networkConnectionLost, "reset")) == [])
        let error = CourierError(.networkConnectionLost, "reset", failingURL: URL(string: "https://b.example/end"))
        #expect(d.complete(hop: 1, .cancelled()) == [.finish(.failure(error))])
    }

    // MARK: Deadlines

    @Test("timedOut once the resource deadline has passed says the resource timeout expired")
    func resourceTimeoutMessage() {
        var d = D.collecting()
        d.start(timeout: 30)
        d.advance(by: 30)
        let error = CourierError(.timedOut, "the resource timeout expired", failingURL: URL(string: D.url))
        #expect(d.complete(.timedOut) == [.finish(.failure(error))])
    }

    @Test("timedOut before the resource deadline keeps the backend's message")
    func idleTimeoutMessage() {
        var d = D.collecting()
        d.start(timeout: 30)
        d.advance(by: 29.5)
        let error = CourierError(.timedOut, "no byte moved for 60 s", failingURL: URL(string: D.url))
        #expect(d.complete(.timedOut) == [.finish(.failure(error))])
    }

    @Test("the deadline passed when a redirect is answered: timedOut without submitting, after the hop's COMPLETE")
    func deadlinePassedAtRedirect() {
        var d = D.collecting()
        d.start(timeout: 30)
        d.respond(D.head(302, ["Location": "/next"]), held: true)
        d.advance(by: 31)
        let proposed = TaskRequest(D.request("https://a.example/next"))
        #expect(d.apply(.redirectAnswered(hop: 1, proposed)) == [.cancelTransfer(101)])
        #expect(d.machine.phase == .finishing)
        #expect(d.machine.hop == 1)
        let error = CourierError(
            .timedOut,
            "the resource timeout expired",
            failingURL: URL(string: "https://a.example/next")
        )
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("the deadline already passed when a credential is answered: timedOut, without retrying")
    func deadlinePassedAtChallenge() {
        var d = D.collecting()
        d.start(timeout: 30)
        d.respond(D.head(401, ["WWW-Authenticate": "Basic realm=\"r\""]), held: true)
        d.advance(by: 30)
        #expect(d.apply(.challengeAnswered(hop: 1, .credential(user: "u", password: "p"))) == [.cancelTransfer(101)])
        let error = CourierError(.timedOut, "the resource timeout expired", failingURL: URL(string: D.url))
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("a deadline already passed at started finishes timedOut without submitting")
    func deadlinePassedAtStart() {
        var d = D.collecting()
        #expect(d.apply(.resume) == [.start])
        let error = CourierError(.timedOut, "the resource timeout expired", failingURL: URL(string: D.url))
        #expect(d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: d.now)) == [.finish(.failure(error))])
        #expect(d.machine.hops.isEmpty)
    }

    // MARK: Errors

    @Test("failingURL is the current hop's URL")
    func failingURLIsCurrentHop() {
        var d = D.collecting(D.request("https://a.example/start"))
        d.start()
        d.followRedirect(hop: 1, to: "https://b.example/end")
        #expect(d.complete(hop: 1, .cancelled()) == [])
        let error = CourierError(.cannotConnectToHost, "refused", failingURL: URL(string: "https://b.example/end"))
        #expect(d.complete(hop: 2, .failure(.cannotConnectToHost, "refused")) == [.finish(.failure(error))])
    }

    @Test("a cancelled COMPLETE without cancel() keeps the backend's error")
    func backendCancelKeepsError() {
        var d = D.collecting()
        d.start()
        let error = CourierError(.cancelled, "the engine shut down", failingURL: URL(string: D.url))
        #expect(d.complete(.failure(.cancelled, "the engine shut down")) == [.finish(.failure(error))])
    }

    @Test("a held response failing without a decision (a timeout) ends the task; the late answer is ignored")
    func heldTransferFails() {
        var d = D.collecting()
        d.start()
        d.respond(D.head(302, ["Location": "/next"]), held: true)
        let error = CourierError(.timedOut, "no byte moved for 60 s", failingURL: URL(string: D.url))
        #expect(d.complete(.timedOut) == [.finish(.failure(error))])
        #expect(d.machine.awaiting == nil)
        #expect(d.apply(.redirectAnswered(hop: 1, TaskRequest(D.request("https://a.example/next")))) == [])
    }

    // MARK: The final report

    @Test("takeFinalReport moves the body chunks and the resume-data handler out once")
    func finalReportMovesOnce() {
        var d = D.collecting()
        d.start()
        d.advance(by: 3)
        d.respond(D.head(200), held: false)
        d.data("abc")
        d.data("def")
        d.machine.resumeDataHandler = { _ in }
        #expect(d.complete(.success()) == [.finish(.success)])
        let first = d.machine.takeFinalReport()
        #expect(first.chunks == [Data("abc".utf8), Data("def".utf8)])
        #expect(first.resumeDataHandler != nil)
        #expect(first.startDate == D.epoch)
        #expect(first.hops.count == 1)
        let second = d.machine.takeFinalReport()
        #expect(second.chunks.isEmpty)
        #expect(second.resumeDataHandler == nil)
        // The rest stays.
        #expect(second.response == first.response)
        #expect(second.hops == first.hops)
        #expect(second.startDate == D.epoch)
    }

    @Test("the final report of a redirected task: hops with their responses, redirect count, both requests")
    func finalReportAfterRedirect() {
        var d = D.collecting(D.request("https://a.example/start"))
        d.start()
        d.followRedirect(hop: 1, status: 301, to: "/end")
        let head = D.head(200, ["Content-Length": "0"])
        d.respond(hop: 2, head, held: false)
        d.complete(hop: 1, .cancelled())
        #expect(d.complete(hop: 2, .success()) == [.finish(.success)])
        let report = d.machine.takeFinalReport()
        #expect(report.redirectCount == 1)
        let urls = ["https://a.example/start", "https://a.example/end"].map(URL.init(string:))
        #expect(report.hops.map(\.request.url) == urls)
        #expect(report.hops.map(\.response?.head.status) == [301, 200])
        #expect(report.response == D.response("https://a.example/end", head))
        #expect(report.originalRequest?.url == URL(string: "https://a.example/start"))
        #expect(report.currentRequest?.url == URL(string: "https://a.example/end"))
        #expect(report.staging == nil)
    }
}
