import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TaskMachine: the final response, its body and resumed downloads")
struct FinalResponseTransitionTests {
    typealias D = MachineDriver

    // MARK: Disposition

    @Test("a data task with a SessionDataDelegate delivers its held final response and asks its disposition")
    func dispositionAsked() {
        var d = D.asking()
        d.start()
        let head = D.head(200, ["Content-Length": "5"])
        let response = D.response(D.url, head)
        #expect(
            d.respond(head, held: true)
                == [.deliver(.response(response)), .ask(.disposition(hop: 1, response: response))]
        )
        #expect(d.machine.awaiting == .disposition)
        #expect(d.machine.finalResponse == response)
    }

    @Test("disposition allow decides allow; the body is then delivered")
    func dispositionAllow() {
        var d = D.asking()
        d.start()
        d.respond(D.head(200), held: true)
        #expect(d.apply(.dispositionAnswered(hop: 1, .allow)) == [.decide(101, .allow)])
        #expect(d.machine.awaiting == nil)
        #expect(d.apply(.dispositionAnswered(hop: 1, .allow)) == [])
        #expect(d.data("hello") == [.deliver(.data(Data("hello".utf8)))])
        #expect(d.complete(.success()) == [.finish(.success)])
    }

    @Test("disposition cancel decides cancel; the cancelled COMPLETE fails the task cancelled")
    func dispositionCancel() {
        var d = D.asking()
        d.start()
        d.respond(D.head(200), held: true)
        #expect(d.apply(.dispositionAnswered(hop: 1, .cancel)) == [.decide(101, .cancel)])
        #expect(d.machine.publicState == .canceling)
        #expect(d.apply(.cancel) == [])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
    }

    @Test("becomeDownload ends the data task silently; its successor is a running download of the same transfer")
    func becomeDownload() {
        var d = D.asking()
        d.start()
        d.machine.taskDescription = "becomes a download"
        d.followRedirect(hop: 1, to: "/file")
        let head = D.head(200, ["Content-Length": "1000"])
        d.respond(hop: 2, head, held: true, progress: TransferProgress(received: 0, expectedToReceive: 1000, sent: 0))
        let staging = URL(fileURLWithPath: "/nonexistent/courier-machine-tests/became.download")
        #expect(
            d.apply(.dispositionAnswered(hop: 2, .becomeDownload(staging: staging)))
                == [.becomeDownload(transfer: 102, staging: staging)]
        )
        #expect(d.machine.phase == .completed)
        var successor = MachineDriver(d.machine.successorForDownload(staging: staging))
        successor.now = d.now
        // The data task reports nothing more (no finish, ever): an event that still reaches it (routed before the
        // registry named the download task) is forwarded as it is.
        var ended = d
        let late = ended.progress(hop: 2, TransferProgress(received: 10))
        #expect(late.count == 1)
        guard case .forward(hop: 2, let event)? = late.first, case .progress = event.payload else {
            Issue.record("a late PROGRESS was not forwarded: \(late)")
            return
        }
        let retired = ended.complete(hop: 1, .cancelled())
        guard case .forward(hop: 1, let completion)? = retired.first, case .complete = completion.payload else {
            Issue.record("a retired hop's late COMPLETE was not forwarded: \(retired)")
            return
        }
        #expect(!ended.complete(hop: 2, .success()).contains { if case .finish = $0 { true } else { false } })
        #expect(ended.apply(.cancel) == [])
        let machine = successor.machine
        #expect(machine.role == TaskMachine.Role(kind: .download, collectsBody: false, asksDisposition: false))
        #expect(machine.phase == .running)
        #expect(machine.hop == 2)
        #expect(machine.transfer == 102)
        #expect(machine.retiredHops == [1])
        #expect(machine.hops == d.machine.hops)
        #expect(machine.redirectCount == 1)
        #expect(machine.expectedToReceive == 1000)
        #expect(machine.finalResponse == D.response("https://a.example/file", head))
        #expect(machine.staging == staging)
        #expect(machine.startDate == D.epoch)
        #expect(machine.resourceDeadline == d.deadline)
        #expect(machine.originalRequest == TaskRequest(D.request(D.url)))
        #expect(machine.currentRequest == TaskRequest(D.request("https://a.example/file")))
        #expect(machine.taskDescription == "becomes a download")
        #expect(machine.publicState == .running)

        // The download goes on with the same transfer: progress, then the end after the retired hop.
        #expect(
            successor.progress(hop: 2, TransferProgress(received: 400, expectedToReceive: 1000))
                == [.deliver(.wroteData(delta: 400, total: 400, expected: 1000))]
        )
        #expect(
            successor.complete(
                hop: 2,
                .success(bytesOnDisk: 1000),
                progress: TransferProgress(received: 1000, expectedToReceive: 1000)
            ) == [.deliver(.wroteData(delta: 600, total: 1000, expected: 1000))]
        )
        #expect(successor.machine.phase == .finishing)
        #expect(successor.complete(hop: 1, .cancelled()) == [.finish(.success)])
        #expect(successor.machine.takeFinalReport().bytesOnDisk == 1000)
    }

    @Test("becomeDownload of a suspended data task: the successor keeps the suspension")
    func becomeDownloadSuspended() {
        var d = D.asking()
        d.start()
        d.respond(D.head(200), held: true)
        #expect(d.apply(.suspend) == [.pauseTransfer(101)])
        d.apply(.dispositionAnswered(hop: 1, .becomeDownload(staging: D.stagingFile)))
        var successor = MachineDriver(d.machine.successorForDownload(staging: D.stagingFile))
        #expect(successor.machine.publicState == .suspended)
        #expect(successor.apply(.resume) == [.resumeTransfer(101)])
    }

    @Test("a failed becomeDownload (heldFailed on the successor) cancels the transfer and fails with the error")
    func becomeDownloadFailed() {
        var d = D.asking()
        d.start()
        d.respond(D.head(200), held: true)
        d.apply(.dispositionAnswered(hop: 1, .becomeDownload(staging: D.stagingFile)))
        var successor = MachineDriver(d.machine.successorForDownload(staging: D.stagingFile))
        let error = CourierError(.cannotOpenFile, "cannot open the staging file")
        #expect(successor.apply(.heldFailed(hop: 0, error)) == [])
        #expect(successor.apply(.heldFailed(hop: 1, error)) == [.cancelTransfer(101)])
        #expect(successor.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("heldFailed while a disposition is asked cancels the held transfer; its COMPLETE reports the error")
    func heldFailedWhileAsking() {
        var d = D.asking()
        d.start()
        d.respond(D.head(200), held: true)
        let error = CourierError(.cannotCreateFile, "no staging directory")
        #expect(d.apply(.heldFailed(hop: 2, error)) == [])
        #expect(d.apply(.heldFailed(hop: 1, error)) == [.cancelTransfer(101)])
        #expect(d.machine.awaiting == nil)
        #expect(d.apply(.dispositionAnswered(hop: 1, .allow)) == [])
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("a disposition answer for a stale hop, or after cancel, is ignored")
    func staleDisposition() {
        var d = D.asking()
        d.start()
        d.respond(D.head(200), held: true)
        #expect(d.apply(.dispositionAnswered(hop: 2, .allow)) == [])
        #expect(d.apply(.dispositionAnswered(hop: 0, .cancel)) == [])
        #expect(d.machine.awaiting == .disposition)
        #expect(d.apply(.cancel) == [.cancelTransfer(101)])
        #expect(d.apply(.dispositionAnswered(hop: 1, .becomeDownload(staging: D.stagingFile))) == [])
        #expect(d.apply(.dispositionAnswered(hop: 1, .allow)) == [])
        #expect(d.machine.phase == .running)
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
    }

    // MARK: Body

    @Test("a collecting task keeps body chunks instead of delivering them; the report has them after finish")
    func collectingKeepsChunks() {
        var d = D.collecting()
        d.start()
        let head = D.head(200, ["Content-Length": "11"])
        let response = D.response(D.url, head)
        #expect(d.respond(head, held: false) == [.deliver(.response(response))])
        #expect(d.data("hello ") == [])
        #expect(d.data("world") == [])
        #expect(d.machine.received == 11)
        #expect(d.complete(.success(), progress: TransferProgress(received: 11)) == [.finish(.success)])
        let report = d.machine.takeFinalReport()
        #expect(report.chunks == [Data("hello ".utf8), Data("world".utf8)])
        #expect(report.response == response)
    }

    @Test("a task that does not collect delivers each chunk as it comes")
    func streamingDelivers() {
        var d = D.streaming()
        d.start()
        d.respond(D.head(200), held: false)
        #expect(d.data("one") == [.deliver(.data(Data("one".utf8)))])
        #expect(d.data("two") == [.deliver(.data(Data("two".utf8)))])
        #expect(d.machine.bodyChunks.isEmpty)
        #expect(d.complete(.success()) == [.finish(.success)])
    }

    @Test("cookies are stored only when the response sets some")
    func cookiesOnlyWhenSet() {
        var d = D.collecting()
        d.start()
        let head = D.head(200, cookies: ["a=1", "b=2; Secure"])
        let response = D.response(D.url, head)
        #expect(d.respond(head, held: false) == [.rememberResponse(response), .deliver(.response(response))])

        var plain = D.collecting()
        plain.start()
        let bare = D.head(200, ["Set-Cookie2": "ignored"])
        #expect(plain.respond(bare, held: false) == [.deliver(.response(D.response(D.url, bare)))])
    }

    @Test("a held final response that sets cookies: store, deliver, ask, in that order")
    func threeActionsInOrder() {
        var d = D.asking()
        d.start()
        let head = D.head(200, cookies: ["id=7"])
        let response = D.response(D.url, head)
        let question = TaskAction.ask(.disposition(hop: 1, response: response))
        #expect(d.respond(head, held: true) == [.rememberResponse(response), .deliver(.response(response)), question])
    }

    @Test("a COMPLETE reports sent bytes, then written bytes, then the finish")
    func completeReportsBothThenFinishes() {
        var d = D.download(D.request(D.url, method: "POST", body: Data("q".utf8)))
        d.start()
        let sending = TransferProgress(expectedToReceive: 8, sent: 1, expectedToSend: 1)
        #expect(d.respond(D.head(200), held: false, progress: sending) == [])
        #expect(
            d.complete(.success(bytesOnDisk: 8), progress: TransferProgress(received: 8, expectedToReceive: 8, sent: 1))
                == [
                    .deliver(.sentBodyData(delta: 1, total: 1, expected: 1)),
                    .deliver(.wroteData(delta: 8, total: 8, expected: 8)),
                    .finish(.success),
                ]
        )
    }

    @Test("an upload reports sent bytes once per PROGRESS or COMPLETE event")
    func uploadProgress() {
        var d = D.upload(bodyLength: 100)
        d.start()
        #expect(
            d.progress(TransferProgress(sent: 40, expectedToSend: 100))
                == [.deliver(.sentBodyData(delta: 40, total: 40, expected: 100))]
        )
        #expect(d.progress(TransferProgress(sent: 40, expectedToSend: 100)) == [])
        let head = D.head(201)
        #expect(
            d.respond(head, held: false, progress: TransferProgress(sent: 100, expectedToSend: 100))
                == [.deliver(.response(D.response(D.url, head)))]
        )
        #expect(
            d.complete(.success(), progress: TransferProgress(sent: 100, expectedToSend: 100))
                == [.deliver(.sentBodyData(delta: 60, total: 100, expected: 100)), .finish(.success)]
        )
    }

    // MARK: Downloads

    @Test("a download's final response needs no decision and is not delivered as data")
    func downloadResponse() {
        var d = D.download()
        d.start()
        let head = D.head(200, ["Content-Length": "1000"])
        #expect(d.respond(head, held: false, progress: TransferProgress(expectedToReceive: 1000)) == [])
        #expect(d.machine.finalResponse == D.response(D.url, head))
        #expect(d.machine.expectedToReceive == 1000)
    }

    @Test("download progress: one coalesced wroteData per PROGRESS or COMPLETE event")
    func downloadProgressCoalesced() {
        var d = D.download()
        d.start()
        d.respond(D.head(200), held: false, progress: TransferProgress(expectedToReceive: 1000))
        #expect(
            d.progress(TransferProgress(received: 300, expectedToReceive: 1000))
                == [.deliver(.wroteData(delta: 300, total: 300, expected: 1000))]
        )
        #expect(d.progress(TransferProgress(received: 300, expectedToReceive: 1000)) == [])
        #expect(
            d.progress(TransferProgress(received: 700, expectedToReceive: 1000))
                == [.deliver(.wroteData(delta: 400, total: 700, expected: 1000))]
        )
        #expect(
            d.complete(.success(bytesOnDisk: 1000), progress: TransferProgress(received: 1000, expectedToReceive: 1000))
                == [.deliver(.wroteData(delta: 300, total: 1000, expected: 1000)), .finish(.success)]
        )
        let report = d.machine.takeFinalReport()
        #expect(report.bytesOnDisk == 1000)
        #expect(report.staging == D.stagingFile)
        #expect(report.bodyOffset == 0)
    }

    @Test("download progress with an unknown length reports transferSizeUnknown")
    func downloadProgressUnknownLength() {
        var d = D.download()
        d.start()
        d.respond(D.head(200, ["Transfer-Encoding": "chunked"]), held: false)
        #expect(
            d.progress(TransferProgress(received: 64))
                == [.deliver(.wroteData(delta: 64, total: 64, expected: SessionTask.transferSizeUnknown))]
        )
    }

    // MARK: Resumed downloads

    @Test("a resumed download's held 206 is allowed and reports the resume offset; progress counts from it")
    func resumed206() {
        var d = D.resumedDownload()
        #expect(
            d.start(resumeOffset: 100)
                == [.submit(d.plan(hop: 1, D.resumedRequest(), resumeOffset: 100, resume: D.resume))]
        )
        let head = D.head(206, ["Content-Range": "bytes 100-999/1000", "Content-Length": "900"])
        #expect(
            d.respond(head, held: true, resumeOffset: 100, progress: TransferProgress(expectedToReceive: 900))
                == [.decide(101, .allow), .deliver(.resumed(offset: 100, expectedTotal: 1000))]
        )
        #expect(d.machine.bodyOffset == 100)
        #expect(
            d.progress(TransferProgress(received: 50, expectedToReceive: 900))
                == [.deliver(.wroteData(delta: 50, total: 150, expected: 1000))]
        )
        #expect(
            d.complete(.success(bytesOnDisk: 1000), progress: TransferProgress(received: 900, expectedToReceive: 900))
                == [.deliver(.wroteData(delta: 850, total: 1000, expected: 1000)), .finish(.success)]
        )
        #expect(d.machine.takeFinalReport().bodyOffset == 100)
    }

    @Test("a resumed download answered 200 restarts: resumed at offset 0")
    func resumed200Restarts() {
        var d = D.resumedDownload()
        d.start(resumeOffset: 100)
        let head = D.head(200, ["Content-Length": "1000"])
        #expect(
            d.respond(head, held: true, resumeOffset: 0, progress: TransferProgress(expectedToReceive: 1000))
                == [.decide(101, .allow), .deliver(.resumed(offset: 0, expectedTotal: 1000))]
        )
        #expect(d.machine.bodyOffset == 0)
        #expect(
            d.progress(TransferProgress(received: 10, expectedToReceive: 1000))
                == [.deliver(.wroteData(delta: 10, total: 10, expected: 1000))]
        )
    }

    @Test("a 416 whose Content-Range length equals the offset: cancel, then success with the partial file")
    func resumed416Complete() {
        var d = D.resumedDownload()
        d.start(resumeOffset: 100)
        let head = D.head(416, ["Content-Range": "bytes */100"])
        #expect(d.respond(head, held: true) == [.decide(101, .cancel)])
        #expect(d.machine.bodyOffset == 100)
        #expect(d.complete(.cancelled(bytesOnDisk: 100)) == [.finish(.success)])
        let report = d.machine.takeFinalReport()
        #expect(report.bodyOffset == 100)
        #expect(report.bytesOnDisk == 100)
        #expect(report.staging == D.stagingFile)
        #expect(report.response == D.response(D.resume.url, head))
    }

    /// Responses a resumed download must not append to its partial file.
    static let refusedResumes: [ResponseHead] = [
        D.head(416, ["Content-Range": "bytes */5000"]),
        D.head(416),
        D.head(500),
        D.head(404),
    ]

    @Test(
        "a resumed download answered with another status fails badServerResponse, keeping the partial",
        arguments: refusedResumes
    )
    func resumedOtherStatusFails(head: ResponseHead) {
        var d = D.resumedDownload()
        d.start(resumeOffset: 100)
        #expect(d.respond(head, held: true) == [.cancelTransfer(101)])
        #expect(d.machine.awaiting == nil)
        let error = CourierError(
            .badServerResponse,
            "the server answered \(head.status) to the resumed request",
            failingURL: URL(string: D.resume.url)
        )
        #expect(d.complete(.cancelled(bytesOnDisk: 100)) == [.finish(.failure(error))])
        #expect(d.machine.takeFinalReport().bytesOnDisk == 100)
    }

    @Test("a resume-data cancel during a 206: cancelled, with the 206 and the bytes on disk kept for resume data")
    func cancelDuring206() {
        var d = D.resumedDownload()
        d.start(resumeOffset: 100)
        let head = D.head(206, ["Content-Range": "bytes 100-999/1000", "ETag": "\"v1\""])
        d.respond(head, held: true, resumeOffset: 100, progress: TransferProgress(expectedToReceive: 900))
        #expect(
            d.progress(TransferProgress(received: 250, expectedToReceive: 900))
                == [.deliver(.wroteData(delta: 250, total: 350, expected: 1000))]
        )
        d.machine.resumeDataHandler = { _ in }
        // Asked for resume data: a backend that keeps the partial file itself (courierd) is told so.
        #expect(d.apply(.cancel) == [.cancelTransferProducingResumeData(101)])
        #expect(
            d.complete(.cancelled(bytesOnDisk: 350), progress: TransferProgress(received: 250, expectedToReceive: 900))
                == [.finish(D.cancelled(D.resume.url))]
        )
        let report = d.machine.takeFinalReport()
        #expect(report.response == D.response(D.resume.url, head))
        #expect(report.bytesOnDisk == 350)
        #expect(report.bodyOffset == 100)
        #expect(report.resumeSource == D.resume)
        #expect(report.staging == D.stagingFile)
        #expect(report.resumeDataHandler != nil)
    }

    // MARK: Counters across hops

    @Test("each hop starts its counters afresh: received and sent bytes of a retired hop do not count")
    func countersPerHop() {
        var d = D.download()
        d.start()
        d.progress(TransferProgress(received: 0, sent: 0))
        d.respond(D.head(401, ["WWW-Authenticate": "Basic realm=\"r\""]), held: true)
        d.apply(.challengeAnswered(hop: 1, .credential(user: "u", password: "p")))
        d.apply(.submitted(hop: 2, transfer: 102))
        d.respond(hop: 2, D.head(200), held: false, progress: TransferProgress(expectedToReceive: 50))
        #expect(
            d.progress(hop: 2, TransferProgress(received: 20, expectedToReceive: 50))
                == [.deliver(.wroteData(delta: 20, total: 20, expected: 50))]
        )
    }

    /// docs/response-path.md: `expected_to_receive` and `countOfBytesExpectedToReceive` are unknown (-1) for an
    /// encoded body. The engine reports the 3xx's `Content-Length` as hop 1's expected length (transfer.c
    /// `finish_headers`), and -1 for hop 2's encoded body; the machine only overwrites `expectedToReceive` with
    /// known (>= 0) values, so each hop starts from unknown.
    @Test("the expected length of a redirect's 3xx does not leak into the next hop's unknown length")
    func expectedLengthPerHop() {
        var d = D.download()
        d.start()
        d.respond(
            D.head(302, ["Location": "/gz", "Content-Length": "0"]),
            held: true,
            progress: TransferProgress(expectedToReceive: 0)
        )
        let proposed = TaskRequest(D.request("https://a.example/gz"))
        d.apply(.redirectAnswered(hop: 1, proposed))
        d.apply(.submitted(hop: 2, transfer: 102))
        d.respond(
            hop: 2,
            D.head(200, ["Content-Encoding": "gzip", "Content-Length": "40"]),
            held: false,
            progress: TransferProgress(expectedToReceive: -1)
        )
        let progress = d.progress(hop: 2, TransferProgress(received: 64, expectedToReceive: -1))
        #expect(progress == [.deliver(.wroteData(delta: 64, total: 64, expected: SessionTask.transferSizeUnknown))])
        #expect(d.machine.expectedToReceive == -1)
    }
}
