import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TaskMachine: redirects")
struct RedirectTransitionTests {
    typealias D = MachineDriver

    static let form = "https://a.example/form"
    static let formBody = Data("name=value".utf8)

    static func post() -> URLRequest {
        D.request(
            form,
            method: "POST",
            headers: ["Content-Type": "application/x-www-form-urlencoded", "X-Trace": "t1"],
            body: formBody
        )
    }

    /// The held redirect question, or nil (recorded as an issue) when the actions are not exactly one.
    static func question(
        _ actions: [TaskAction],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> (hop: Int, response: TaskResponse, proposed: TaskRequest)? {
        guard actions.count == 1, case .ask(.redirect(let hop, let response, let proposed)) = actions[0] else {
            Issue.record("expected one redirect question, got \(actions)", sourceLocation: sourceLocation)
            return nil
        }
        return (hop, response, proposed)
    }

    // MARK: Asking

    @Test("a held 303 after POST asks with a proposed GET without body or body headers")
    func askSeeOtherAfterPost() {
        var d = D.collecting(Self.post())
        d.start()
        let head = D.head(303, ["Location": "/done"])
        let actions = d.respond(head, held: true)
        let proposed = D.request("https://a.example/done", method: "GET", headers: ["X-Trace": "t1"])
        let response = D.response(Self.form, head)
        #expect(actions == [.ask(.redirect(hop: 1, response: response, proposed: TaskRequest(proposed)))])
        #expect(d.machine.awaiting == .redirect)
        #expect(d.machine.hops.last?.response == response)
        #expect(d.machine.finalResponse == nil)
        #expect(d.machine.redirectCount == 0)
        #expect(d.machine.publicState == .running)
    }

    /// (status, method of the proposed request, whether the body stays)
    static let rewriting: [(Int, String, Bool)] = [
        (301, "GET", false), (302, "GET", false), (303, "GET", false), (307, "POST", true), (308, "POST", true),
    ]

    @Test("the proposed request follows RedirectPolicy's method rewriting", arguments: rewriting)
    func methodRewriting(status: Int, method: String, keepsBody: Bool) throws {
        var d = D.collecting(Self.post())
        d.start()
        let asked = try #require(Self.question(d.respond(D.head(status, ["Location": "/next"]), held: true)))
        #expect(asked.hop == 1)
        let proposed = asked.proposed.urlRequest
        #expect(proposed.url == URL(string: "https://a.example/next"))
        #expect(proposed.httpMethod == method)
        #expect(proposed.httpBody == (keepsBody ? Self.formBody : nil))
        let contentType = keepsBody ? "application/x-www-form-urlencoded" : nil
        #expect(proposed.value(forHTTPHeaderField: "Content-Type") == contentType)
        #expect(proposed.value(forHTTPHeaderField: "X-Trace") == "t1")
    }

    @Test("a held 3xx that sets cookies stores them before asking")
    func redirectStoresCookies() {
        var d = D.collecting()
        d.start()
        let head = D.head(302, ["Location": "https://a.example/next"], cookies: ["session=1; Path=/"])
        let response = D.response(D.url, head)
        #expect(
            d.respond(head, held: true) == [
                .rememberResponse(response),
                .ask(
                    .redirect(
                        hop: 1,
                        response: response,
                        proposed: TaskRequest(D.request("https://a.example/next"))
                    )
                ),
            ]
        )
    }

    @Test("a 3xx that is not held (no Location) is the final response")
    func unheldRedirectIsFinal() {
        var d = D.collecting()
        d.start()
        let head = D.head(300)
        #expect(d.respond(head, held: false) == [.deliver(.response(D.response(D.url, head)))])
        #expect(d.machine.awaiting == nil)
        #expect(d.complete(.success()) == [.finish(.success)])
    }

    // MARK: Following

    @Test("following the proposed request retires the hop, cancels its transfer and submits hop 2 with the new URL")
    func followProposed() throws {
        var d = D.collecting()
        d.start()
        let head = D.head(302, ["Location": "https://b.example/next"])
        let asked = try #require(Self.question(d.respond(head, held: true)))
        let next = D.request("https://b.example/next")
        #expect(asked.proposed == TaskRequest(next))

        d.advance(by: 1)
        #expect(
            d.apply(.redirectAnswered(hop: 1, asked.proposed)) == [
                .cancelTransfer(101), .submit(d.plan(hop: 2, next)),
            ]
        )
        #expect(d.machine.hop == 2)
        #expect(d.machine.retiredHops == [1])
        #expect(d.machine.redirectCount == 1)
        #expect(d.machine.transfer == 0)
        #expect(d.machine.awaiting == nil)
        #expect(d.machine.currentRequest == TaskRequest(next))
        #expect(d.machine.currentURL == URL(string: "https://b.example/next"))
        #expect(d.machine.hops.count == 2)
        #expect(d.machine.hops.last?.start == D.epoch.addingTimeInterval(1))

        #expect(d.apply(.submitted(hop: 2, transfer: 102)) == [])
        let final = D.head(200)
        #expect(
            d.respond(hop: 2, final, held: false) == [.deliver(.response(D.response("https://b.example/next", final)))]
        )
        #expect(d.complete(hop: 1, .cancelled()) == [])
        #expect(d.complete(hop: 2, .success()) == [.finish(.success)])
        let report = d.machine.takeFinalReport()
        #expect(report.redirectCount == 1)
        #expect(report.hops.map(\.response) == [D.response(D.url, head), D.response("https://b.example/next", final)])
        #expect(report.originalRequest == TaskRequest(D.request(D.url)))
        #expect(report.currentRequest == TaskRequest(next))
    }

    @Test("the delegate's own request is followed instead of the proposed one")
    func followOtherRequest() throws {
        var d = D.collecting()
        d.start()
        let asked = try #require(Self.question(d.respond(D.head(301, ["Location": "/moved"]), held: true)))
        #expect(asked.proposed.urlRequest.url == URL(string: "https://a.example/moved"))
        let chosen = D.request("https://c.example/elsewhere", method: "PUT", headers: ["X-Chosen": "1"])
        #expect(
            d.apply(.redirectAnswered(hop: 1, TaskRequest(chosen)))
                == [.cancelTransfer(101), .submit(d.plan(hop: 2, chosen))]
        )
    }

    @Test("http to https is followed")
    func upgradeFollowed() throws {
        var d = D.collecting(D.request("http://a.example/plain"))
        d.start()
        let head = D.head(301, ["Location": "https://a.example/secure"])
        let asked = try #require(Self.question(d.respond(head, held: true)))
        #expect(
            d.apply(.redirectAnswered(hop: 1, asked.proposed))
                == [.cancelTransfer(101), .submit(d.plan(hop: 2, D.request("https://a.example/secure")))]
        )
    }

    @Test("answering nil delivers the 3xx as the final response and allows it")
    func declineDeliversRedirect() throws {
        var d = D.collecting()
        d.start()
        let head = D.head(302, ["Location": "/next"])
        _ = try #require(Self.question(d.respond(head, held: true)))
        let response = D.response(D.url, head)
        #expect(d.apply(.redirectAnswered(hop: 1, nil)) == [.deliver(.response(response)), .decide(101, .allow)])
        #expect(d.machine.finalResponse == response)
        #expect(d.machine.redirectCount == 0)
        #expect(d.machine.awaiting == nil)
        #expect(d.machine.retiredHops.isEmpty)
        #expect(d.complete(.success()) == [.finish(.success)])
        #expect(d.machine.takeFinalReport().response == response)
    }

    @Test("a declined 3xx of a task that asks its disposition asks it about the 3xx")
    func declineAsksDisposition() throws {
        var d = D.asking()
        d.start()
        let head = D.head(307, ["Location": "/next"])
        _ = try #require(Self.question(d.respond(head, held: true)))
        let response = D.response(D.url, head)
        #expect(
            d.apply(.redirectAnswered(hop: 1, nil))
                == [.deliver(.response(response)), .ask(.disposition(hop: 1, response: response))]
        )
        #expect(d.apply(.dispositionAnswered(hop: 1, .allow)) == [.decide(101, .allow)])
    }

    @Test("a declined 3xx of a download is allowed; the 3xx is its response")
    func declineDownload() throws {
        var d = D.download()
        d.start()
        let head = D.head(302, ["Location": "/next"])
        _ = try #require(Self.question(d.respond(head, held: true)))
        #expect(d.apply(.redirectAnswered(hop: 1, nil)) == [.decide(101, .allow)])
        #expect(d.machine.finalResponse == D.response(D.url, head))
    }

    // MARK: Limits and refusals

    @Test("16 redirects are followed; the 17th fails httpTooManyRedirects: cancel, then the COMPLETE reports it")
    func tooManyRedirects() {
        var d = D.collecting()
        d.start()
        for hop in 1...16 {
            let actions = d.followRedirect(hop: hop, to: "/r\(hop)")
            let next = d.plan(hop: hop + 1, D.request("https://a.example/r\(hop)"))
            #expect(actions == [.cancelTransfer(D.transfer(hop)), .submit(next)])
            #expect(d.complete(hop: hop, .cancelled()) == [])
        }
        #expect(d.machine.redirectCount == 16)
        #expect(d.machine.hop == 17)
        #expect(d.respond(hop: 17, D.head(302, ["Location": "/r17"]), held: true) == [.cancelTransfer(117)])
        #expect(d.machine.awaiting == nil)
        #expect(d.machine.phase == .running)
        let error = CourierError(
            .httpTooManyRedirects,
            "more than 16 redirects",
            failingURL: URL(string: "https://a.example/r17")
        )
        #expect(d.complete(hop: 17, .cancelled()) == [.finish(.failure(error))])
        #expect(d.machine.takeFinalReport().hops.count == 17)
    }

    @Test("a redirect from https to http is refused with insecureRedirect")
    func insecureRedirectRefused() {
        var d = D.collecting()
        d.start()
        #expect(d.respond(D.head(301, ["Location": "http://a.example/plain"]), held: true) == [.cancelTransfer(101)])
        #expect(d.machine.awaiting == nil)
        #expect(d.machine.hop == 1)
        let error = CourierError(
            .insecureRedirect,
            "redirect from https to http refused",
            failingURL: URL(string: "http://a.example/plain")
        )
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("a delegate answering an https task with an http request is refused too, with no new hop")
    func insecureAnswerRefused() throws {
        var d = D.collecting()
        d.start()
        _ = try #require(Self.question(d.respond(D.head(302, ["Location": "/next"]), held: true)))
        let plain = D.request("http://a.example/plain")
        #expect(d.apply(.redirectAnswered(hop: 1, TaskRequest(plain))) == [.cancelTransfer(101)])
        #expect(d.machine.hop == 1)
        let error = CourierError(
            .insecureRedirect,
            "redirect from https to http refused",
            failingURL: URL(string: "http://a.example/plain")
        )
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("a redirect to another scheme is refused with unsupportedURL")
    func otherSchemeRefused() {
        var d = D.collecting()
        d.start()
        #expect(d.respond(D.head(302, ["Location": "ftp://files.example/x"]), held: true) == [.cancelTransfer(101)])
        let error = CourierError(
            .unsupportedURL,
            "redirect to an unsupported scheme refused",
            failingURL: URL(string: "ftp://files.example/x")
        )
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    // MARK: Stale answers and cancel

    @Test("a redirect answer for a stale hop is ignored")
    func staleAnswerIgnored() throws {
        var d = D.collecting()
        d.start()
        let first = try #require(Self.question(d.respond(D.head(302, ["Location": "/two"]), held: true)))
        d.apply(.redirectAnswered(hop: 1, first.proposed))
        d.apply(.submitted(hop: 2, transfer: 102))
        let second = try #require(Self.question(d.respond(hop: 2, D.head(302, ["Location": "/three"]), held: true)))
        #expect(second.hop == 2)
        // Hop 1's question was answered twice; the second answer arrives now.
        #expect(d.apply(.redirectAnswered(hop: 1, first.proposed)) == [])
        #expect(d.apply(.redirectAnswered(hop: 1, nil)) == [])
        #expect(d.apply(.redirectAnswered(hop: 3, second.proposed)) == [])
        #expect(d.machine.awaiting == .redirect)
        #expect(d.machine.hop == 2)
        #expect(
            d.apply(.redirectAnswered(hop: 2, second.proposed))
                == [.cancelTransfer(102), .submit(d.plan(hop: 3, D.request("https://a.example/three")))]
        )
        // And once answered, the same hop's answer again is stale too.
        #expect(d.apply(.redirectAnswered(hop: 2, second.proposed)) == [])
    }

    @Test("a redirect answer with no question open is ignored")
    func answerWithoutQuestion() {
        var d = D.collecting()
        d.start()
        #expect(d.apply(.redirectAnswered(hop: 1, TaskRequest(D.request("https://a.example/x")))) == [])
        d.respond(D.head(200), held: false)
        #expect(d.apply(.redirectAnswered(hop: 1, nil)) == [])
        #expect(d.machine.hop == 1)
    }

    @Test("a redirect answer after cancel is ignored")
    func answerAfterCancelIgnored() throws {
        var d = D.collecting()
        d.start()
        let asked = try #require(Self.question(d.respond(D.head(302, ["Location": "/next"]), held: true)))
        #expect(d.apply(.cancel) == [.cancelTransfer(101)])
        #expect(d.machine.awaiting == nil)
        #expect(d.apply(.redirectAnswered(hop: 1, asked.proposed)) == [])
        #expect(d.apply(.redirectAnswered(hop: 1, nil)) == [])
        #expect(d.machine.hop == 1)
        #expect(d.machine.redirectCount == 0)
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
    }

    @Test("a cancel racing a held redirect: finishes cancelled exactly once and never submits hop 2")
    func cancelRacingRedirect() throws {
        var d = D.collecting()
        d.start()
        var all: [TaskAction] = []
        let asked = try #require(Self.question(d.respond(D.head(302, ["Location": "/next"]), held: true)))
        all += d.apply(.cancel)
        all += d.apply(.redirectAnswered(hop: 1, asked.proposed))
        all += d.complete(.cancelled())
        // Anything later: a second answer, a late COMPLETE, another cancel.
        all += d.apply(.redirectAnswered(hop: 1, asked.proposed))
        all += d.complete(.cancelled())
        all += d.apply(.cancel)
        #expect(all == [.cancelTransfer(101), .finish(D.cancelled(D.url))])
        #expect(all.filter(\.isSubmit).isEmpty)
        #expect(d.machine.hop == 1)
        #expect(d.machine.hops.count == 1)
    }

    @Test("a cancel racing a held redirect, the answer arriving after the cancelled COMPLETE")
    func cancelRacingRedirectLateAnswer() throws {
        var d = D.collecting()
        d.start()
        let asked = try #require(Self.question(d.respond(D.head(302, ["Location": "/next"]), held: true)))
        #expect(d.apply(.cancel) == [.cancelTransfer(101)])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
        #expect(d.apply(.redirectAnswered(hop: 1, asked.proposed)) == [])
        #expect(d.machine.hop == 1)
    }

    // MARK: Credentials across origins

    /// (redirect target, whether it is the same origin as https://a.example/resource)
    static let origins: [(String, Bool)] = [
        ("/same-origin", true),
        ("https://a.example:443/explicit-port", true),
        ("https://A.EXAMPLE/upper-case-host", true),
        ("https://a.example:8443/other-port", false),
        ("https://b.example/other-host", false),
    ]

    @Test("a credential follows a redirect to the same origin only", arguments: origins)
    func credentialAcrossOrigins(location: String, sameOrigin: Bool) throws {
        var d = D.collecting(D.request(D.url, headers: ["Authorization": "Bearer t", "X-Keep": "k"]))
        d.start()
        d.answerChallenge(hop: 1, user: "u", password: "p")
        #expect(d.machine.authentication == .basic(user: "u", password: "p"))
        let asked = try #require(Self.question(d.respond(hop: 2, D.head(302, ["Location": location]), held: true)))
        let proposed = asked.proposed.urlRequest
        // The origin-bound header goes only to the same origin (RedirectPolicy).
        #expect(proposed.value(forHTTPHeaderField: "Authorization") == (sameOrigin ? "Bearer t" : nil))
        #expect(proposed.value(forHTTPHeaderField: "X-Keep") == "k")
        let carried: TransferSpec.Authentication = sameOrigin ? .basic(user: "u", password: "p") : .none
        #expect(
            d.apply(.redirectAnswered(hop: 2, asked.proposed))
                == [.cancelTransfer(102), .submit(d.plan(hop: 3, proposed, authentication: carried))]
        )
        #expect(d.machine.authentication == carried)
    }

    @Test("a delegate's cross-origin request drops the credential, even when the Location was same-origin")
    func delegateCrossOriginDropsCredential() throws {
        var d = D.collecting()
        d.start()
        d.answerChallenge(hop: 1)
        let asked = try #require(Self.question(d.respond(hop: 2, D.head(302, ["Location": "/same"]), held: true)))
        #expect(asked.proposed.urlRequest.url == URL(string: "https://a.example/same"))
        let elsewhere = D.request("https://b.example/elsewhere")
        #expect(
            d.apply(.redirectAnswered(hop: 2, TaskRequest(elsewhere)))
                == [.cancelTransfer(102), .submit(d.plan(hop: 3, elsewhere, authentication: .none))]
        )
    }

    // MARK: Retired hops

    @Test("a retired hop's DATA and PROGRESS are ignored; its COMPLETE is awaited")
    func retiredHopEventsIgnored() {
        var d = D.streaming()
        d.start()
        d.followRedirect(hop: 1, to: "/two")
        #expect(d.data(hop: 1, "stale body", progress: TransferProgress(received: 10)) == [])
        #expect(d.progress(hop: 1, TransferProgress(received: 500, expectedToReceive: 500, sent: 7)) == [])
        #expect(d.respond(hop: 1, D.head(200), held: false) == [])
        #expect(d.machine.received == 0)
        #expect(d.machine.sent == 0)
        #expect(d.machine.expectedToReceive == -1)
        #expect(d.machine.finalResponse == nil)

        let head = D.head(200)
        #expect(
            d.respond(hop: 2, head, held: false) == [.deliver(.response(D.response("https://a.example/two", head)))]
        )
        #expect(d.data(hop: 2, "fresh") == [.deliver(.data(Data("fresh".utf8)))])
        #expect(d.complete(hop: 2, .success()) == [])
        #expect(d.machine.phase == .finishing)
        #expect(d.complete(hop: 1, .cancelled()) == [.finish(.success)])
    }

    @Test("a submit's late answer for a hop already retired is ignored (its events came first)")
    func lateSubmittedForRetiredHop() throws {
        var d = D.collecting()
        d.start(adopt: false)
        // The held response adopts hop 1's transfer before the submit's answer comes back.
        let asked = try #require(Self.question(d.respond(D.head(302, ["Location": "/two"]), held: true)))
        #expect(d.machine.transfer == 101)
        #expect(
            d.apply(.redirectAnswered(hop: 1, asked.proposed))
                == [.cancelTransfer(101), .submit(d.plan(hop: 2, D.request("https://a.example/two")))]
        )
        #expect(d.apply(.submitted(hop: 1, transfer: 101)) == [])
        #expect(d.machine.transfer == 0)
        #expect(d.apply(.submitted(hop: 2, transfer: 102)) == [])
        #expect(d.machine.transfer == 102)
    }

    @Test("a held 3xx whose Location cannot be parsed is the final response: allowed, never left held")
    func unusableLocation() {
        var d = D.collecting()
        d.start()
        let head = D.head(302, ["Location": "http://[::1"])
        #expect(d.respond(head, held: true) == [.deliver(.response(D.response(D.url, head))), .decide(101, .allow)])
        #expect(d.machine.awaiting == nil)
    }

    @Test("a redirect answered with a request without a URL fails badURL, cancelling the held transfer")
    func answerWithoutURL() throws {
        var d = D.collecting()
        d.start()
        _ = try #require(Self.question(d.respond(D.head(302, ["Location": "/next"]), held: true)))
        var broken = D.request("https://a.example/next")
        broken.url = nil
        #expect(d.apply(.redirectAnswered(hop: 1, TaskRequest(broken))) == [.cancelTransfer(101)])
        #expect(d.machine.hop == 1)
        let error = CourierError(.badURL, "the redirect request has no URL")
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("a held 3xx arriving after cancel (the id learned from it) is cancelled and starts no hop")
    func redirectAfterCancel() {
        var d = D.collecting()
        d.start(adopt: false)
        #expect(d.apply(.cancel) == [])
        let actions = d.respond(D.head(302, ["Location": "/next"]), held: true)
        // The transfer is cancelled at once, and nobody is asked about the 3xx of a task that is ending.
        #expect(actions == [.cancelTransfer(101)])
        let proposed = TaskRequest(D.request("https://a.example/next"))
        #expect(d.apply(.redirectAnswered(hop: 1, proposed)) == [])
        #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
        #expect(d.machine.hop == 1)
    }

    @Test("a held 3xx, 401 or disposition that arrives after cancel() asks nobody")
    func noQuestionAfterCancel() {
        for head in [D.head(302, ["Location": "/next"]), D.head(401, ["WWW-Authenticate": "Basic realm=\"r\""])] {
            var d = D.collecting()
            d.start()
            #expect(d.apply(.cancel) == [.cancelTransfer(101)])
            #expect(d.respond(head, held: true) == [])
            #expect(d.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
        }
        var asking = D.asking()
        asking.start()
        #expect(asking.apply(.cancel) == [.cancelTransfer(101)])
        #expect(asking.respond(D.head(200), held: true) == [])
    }

    @Test("a resumed download that is redirected restarts the entity at the new URL from offset 0")
    func resumedDownloadRedirected() throws {
        var d = D.resumedDownload()
        d.start(resumeOffset: 100)
        let asked = try #require(Self.question(d.respond(D.head(301, ["Location": "/moved.bin"]), held: true)))
        let moved = D.request("https://a.example/moved.bin", headers: D.resume.headers)
        #expect(asked.proposed == TaskRequest(moved))
        #expect(
            d.apply(.redirectAnswered(hop: 1, asked.proposed))
                == [.cancelTransfer(101), .submit(d.plan(hop: 2, moved, resumeOffset: 0, resume: nil))]
        )
        d.apply(.submitted(hop: 2, transfer: 102))
        #expect(
            d.respond(hop: 2, D.head(200), held: false, progress: TransferProgress(expectedToReceive: 1000))
                == [.deliver(.resumed(offset: 0, expectedTotal: 1000))]
        )
    }

    /// `redirectCount` becomes `SessionTaskMetrics.redirectCount`: the redirects that occurred, so a refused or
    /// timed-out redirect that started no hop is not counted.
    @Test("a redirect answer that starts no hop (refused, or past the deadline) is not counted")
    func unfollowedRedirectNotCounted() throws {
        var refused = D.collecting()
        refused.start()
        _ = try #require(Self.question(refused.respond(D.head(302, ["Location": "/next"]), held: true)))
        let plain = TaskRequest(D.request("http://a.example/plain"))
        #expect(refused.apply(.redirectAnswered(hop: 1, plain)) == [.cancelTransfer(101)])
        refused.complete(.cancelled())

        var late = D.collecting()
        late.start(timeout: 10)
        let asked = try #require(Self.question(late.respond(D.head(302, ["Location": "/next"]), held: true)))
        late.advance(by: 11)
        #expect(late.apply(.redirectAnswered(hop: 1, asked.proposed)) == [.cancelTransfer(101)])
        late.complete(.cancelled())

        #expect(refused.machine.phase == .completed)
        #expect(late.machine.phase == .completed)
        let counts = (refused.machine.takeFinalReport().redirectCount, late.machine.takeFinalReport().redirectCount)
        #expect(counts.0 == 0)
        #expect(counts.1 == 0)
    }
}
