import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TaskMachine: authentication challenges")
struct AuthenticationTransitionTests {
    typealias D = MachineDriver

    static let basic = D.head(401, ["WWW-Authenticate": "Basic realm=\"r\""])

    static func challenge(
        hop: Int = 1,
        _ scheme: AuthenticationOffer.Scheme,
        realm: String?,
        url: String = D.url,
        failures: Int = 0,
        _ head: ResponseHead
    ) -> TaskAction {
        .ask(
            .challenge(
                hop: hop,
                TaskChallenge(
                    offer: AuthenticationOffer(scheme: scheme, realm: realm),
                    url: URL(string: url)!,
                    previousFailureCount: failures,
                    response: D.response(url, head)
                )
            )
        )
    }

    @Test("a held 401 with Basic asks a challenge: scheme basic, realm r, previousFailureCount 0")
    func basicChallengeAsked() {
        var d = D.collecting()
        d.start()
        #expect(d.respond(Self.basic, held: true) == [Self.challenge(.basic, realm: "r", Self.basic)])
        #expect(d.machine.awaiting == .authentication(.basic))
        #expect(d.machine.finalResponse == nil)
        #expect(d.machine.hops.last?.response == D.response(D.url, Self.basic))
        #expect(d.machine.failedAuthentications == 0)
    }

    @Test("a credential retries the request on hop 2 with Basic; the 200 then completes the task")
    func credentialRetries() {
        var d = D.collecting(D.request(D.url, method: "POST", body: Data("payload".utf8)))
        d.start()
        d.respond(Self.basic, held: true)
        d.advance(by: 1)
        let retry = D.request(D.url, method: "POST", body: Data("payload".utf8))
        #expect(
            d.apply(.challengeAnswered(hop: 1, .credential(user: "user", password: "secret")))
                == [
                    .cancelTransfer(101),
                    .submit(d.plan(hop: 2, retry, authentication: .basic(user: "user", password: "secret"))),
                ]
        )
        #expect(d.machine.retiredHops == [1])
        #expect(d.machine.authentication == .basic(user: "user", password: "secret"))
        #expect(d.machine.redirectCount == 0)
        #expect(d.machine.awaiting == nil)
        #expect(d.apply(.submitted(hop: 2, transfer: 102)) == [])
        let ok = D.head(200)
        #expect(d.respond(hop: 2, ok, held: false) == [.deliver(.response(D.response(D.url, ok)))])
        #expect(d.complete(hop: 1, .cancelled()) == [])
        #expect(d.complete(hop: 2, .success()) == [.finish(.success)])
        #expect(d.machine.failedAuthentications == 0)
    }

    @Test("Digest is preferred over Basic and answered with a Digest credential")
    func digestPreferred() {
        var d = D.collecting()
        d.start()
        let head = D.head(
            401,
            ["WWW-Authenticate": "Basic realm=\"b\", Digest realm=\"d\", nonce=\"n0\", qop=\"auth\""]
        )
        #expect(d.respond(head, held: true) == [Self.challenge(.digest, realm: "d", head)])
        #expect(d.machine.awaiting == .authentication(.digest))
        #expect(
            d.apply(.challengeAnswered(hop: 1, .credential(user: "u", password: "p")))
                == [
                    .cancelTransfer(101),
                    .submit(d.plan(hop: 2, D.request(D.url), authentication: .digest(user: "u", password: "p"))),
                ]
        )
    }

    @Test("a second 401 after a credential is the final response (allowed); the failure is counted")
    func wrongCredentialIsFinal() {
        var d = D.collecting()
        d.start()
        d.answerChallenge(hop: 1)
        let again = D.head(401, ["WWW-Authenticate": "Basic realm=\"r\""])
        let response = D.response(D.url, again)
        #expect(d.respond(hop: 2, again, held: true) == [.deliver(.response(response)), .decide(102, .allow)])
        #expect(d.machine.failedAuthentications == 1)
        #expect(d.machine.awaiting == nil)
        #expect(d.machine.finalResponse == response)
        #expect(d.complete(hop: 1, .cancelled()) == [])
        #expect(d.complete(hop: 2, .success()) == [.finish(.success)])
        #expect(d.machine.hop == 2)
    }

    @Test("withoutCredential makes the 401 the final response")
    func withoutCredential() {
        var d = D.collecting()
        d.start()
        d.respond(Self.basic, held: true)
        let response = D.response(D.url, Self.basic)
        #expect(
            d.apply(.challengeAnswered(hop: 1, .withoutCredential))
                == [.deliver(.response(response)), .decide(101, .allow)]
        )
        #expect(d.machine.finalResponse == response)
        #expect(d.machine.retiredHops.isEmpty)
        #expect(d.machine.failedAuthentications == 0)
        #expect(d.complete(.success()) == [.finish(.success)])
    }

    @Test("cancel fails the task cancelled: the transfer is cancelled and its COMPLETE reports it")
    func cancelChallenge() {
        var d = D.collecting()
        d.start()
        d.respond(Self.basic, held: true)
        #expect(d.apply(.challengeAnswered(hop: 1, .cancel)) == [.cancelTransfer(101)])
        #expect(d.machine.publicState == .canceling)
        #expect(d.apply(.challengeAnswered(hop: 1, .withoutCredential)) == [])
        let error = CourierError(
            .cancelled,
            "the authentication challenge was cancelled",
            failingURL: URL(string: D.url)
        )
        #expect(d.complete(.cancelled()) == [.finish(.failure(error))])
    }

    @Test("407 uses Proxy-Authenticate, not WWW-Authenticate")
    func proxyChallenge() {
        var d = D.collecting()
        d.start()
        let head = D.head(
            407,
            ["Proxy-Authenticate": "Basic realm=\"proxy\"", "WWW-Authenticate": "Digest realm=\"www\", nonce=\"n\""]
        )
        #expect(d.respond(head, held: true) == [Self.challenge(.basic, realm: "proxy", head)])
        // The credential is the proxy's (Proxy-Authorization), for this hop and the later ones; none goes to the
        // server.
        var plan = d.plan(hop: 2, D.request(D.url))
        plan.proxyAuthentication = .basic(user: "p", password: "q")
        #expect(
            d.apply(.challengeAnswered(hop: 1, .credential(user: "p", password: "q")))
                == [.cancelTransfer(101), .submit(plan)]
        )
    }

    @Test("a 407 with only WWW-Authenticate is final at once")
    func proxyWithoutProxyHeader() {
        var d = D.collecting()
        d.start()
        let head = D.head(407, ["WWW-Authenticate": "Basic realm=\"r\""])
        #expect(d.respond(head, held: true) == [.deliver(.response(D.response(D.url, head))), .decide(101, .allow)])
    }

    static let unanswerable: [[String: String]] = [
        ["WWW-Authenticate": "Bearer realm=\"api\""],
        ["WWW-Authenticate": "NegotiateX"],
        ["WWW-Authenticate": "BasicX realm=\"r\""],
        [:],
    ]

    @Test("a 401 with no scheme Courier speaks is the final response at once", arguments: unanswerable)
    func unanswerableIsFinal(fields: [String: String]) {
        var d = D.collecting()
        d.start()
        let head = D.head(401, fields)
        #expect(d.respond(head, held: true) == [.deliver(.response(D.response(D.url, head))), .decide(101, .allow)])
        #expect(d.machine.awaiting == nil)
        #expect(d.complete(.success()) == [.finish(.success)])
    }

    @Test("NTLM and Negotiate are offered to the delegate, before Digest and Basic", arguments: [
        ("NTLM", AuthenticationOffer.Scheme.ntlm), ("Negotiate", .negotiate), ("Basic realm=\"r\", NTLM", .ntlm),
        ("Digest realm=\"r\", nonce=\"n\", Negotiate", .negotiate),
    ])
    func connectionBasedSchemes(field: String, scheme: AuthenticationOffer.Scheme) {
        var d = D.collecting()
        d.start()
        _ = d.respond(D.head(401, ["WWW-Authenticate": field]), held: true)
        #expect(d.machine.awaiting == .authentication(scheme))
    }

    @Test("a 401 that is not held is the final response with no decision")
    func unheldChallengeIsFinal() {
        var d = D.collecting()
        d.start()
        #expect(d.respond(Self.basic, held: false) == [.deliver(.response(D.response(D.url, Self.basic)))])
    }

    @Test("an auth retry of a resumed download keeps the resume offset and the resume data")
    func resumedDownloadRetryKeepsOffset() {
        var d = D.resumedDownload()
        let request = D.resumedRequest()
        #expect(d.start(resumeOffset: 100) == [.submit(d.plan(hop: 1, request, resumeOffset: 100, resume: D.resume))])
        let head = D.head(401, ["WWW-Authenticate": "Basic realm=\"files\""])
        #expect(d.respond(head, held: true) == [Self.challenge(.basic, realm: "files", url: D.resume.url, head)])
        #expect(
            d.apply(.challengeAnswered(hop: 1, .credential(user: "u", password: "p")))
                == [
                    .cancelTransfer(101),
                    .submit(
                        d.plan(
                            hop: 2,
                            request,
                            resumeOffset: 100,
                            authentication: .basic(user: "u", password: "p"),
                            resume: D.resume
                        )
                    ),
                ]
        )
        #expect(d.machine.requestedResumeOffset == 100)
    }

    @Test("a challenge answer for a stale hop, a second answer, or one after cancel is ignored")
    func staleChallengeAnswers() {
        var d = D.collecting()
        d.start()
        d.answerChallenge(hop: 1)
        #expect(d.apply(.challengeAnswered(hop: 1, .credential(user: "x", password: "y"))) == [])
        #expect(d.apply(.challengeAnswered(hop: 2, .withoutCredential)) == [])
        #expect(d.machine.hop == 2)

        var c = D.collecting()
        c.start()
        c.respond(Self.basic, held: true)
        #expect(c.apply(.cancel) == [.cancelTransfer(101)])
        #expect(c.apply(.challengeAnswered(hop: 1, .credential(user: "u", password: "p"))) == [])
        #expect(c.complete(.cancelled()) == [.finish(D.cancelled(D.url))])
        #expect(c.machine.hop == 1)
    }

    @Test("a challenge answer while a redirect question is open is ignored, and the reverse")
    func answerOfTheWrongKind() {
        var d = D.collecting()
        d.start()
        d.respond(D.head(302, ["Location": "/next"]), held: true)
        #expect(d.apply(.challengeAnswered(hop: 1, .withoutCredential)) == [])
        #expect(d.machine.awaiting == .redirect)

        var c = D.collecting()
        c.start()
        c.respond(Self.basic, held: true)
        #expect(c.apply(.redirectAnswered(hop: 1, nil)) == [])
        #expect(c.apply(.dispositionAnswered(hop: 1, .allow)) == [])
        #expect(c.machine.awaiting == .authentication(.basic))
    }

    @Test("a challenge after a cross-origin redirect is asked again: the credential was not carried")
    func challengeAfterCrossOriginRedirect() {
        var d = D.collecting()
        d.start()
        d.answerChallenge(hop: 1)
        d.followRedirect(hop: 2, to: "https://b.example/other")
        #expect(d.machine.authentication == .none)
        let head = D.head(401, ["WWW-Authenticate": "Basic realm=\"b\""])
        #expect(
            d.respond(hop: 3, head, held: true)
                == [Self.challenge(hop: 3, .basic, realm: "b", url: "https://b.example/other", head)]
        )
    }
}
