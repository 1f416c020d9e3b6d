import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The response path: which response is followed, retried, asked about, or delivered (`docs/response-path.md`).
extension TaskMachine {
    mutating func receivedResponse(
        _ head: ResponseHead,
        held: Bool,
        resumeOffset: Int64,
        at now: Date,
        into actions: inout TaskActions
    ) {
        guard let url = currentURL else {
            // Unreachable: every hop has a request with a URL. Never leave a held transfer waiting.
            failHeld(CourierError(.badServerResponse, "a response to a request without a URL"), into: &actions)
            return
        }
        if role.kind == .upload, probed(head, held: held, into: &actions) {
            return
        }
        var response = TaskResponse(url: url, head: head)
        if !head.setCookies.isEmpty || head.value("Strict-Transport-Security") != nil {
            actions.append(.rememberResponse(response))
        }
        if !hops.isEmpty {
            hops[hops.count - 1].response = response
        }
        guard !cancelRequested else {
            // The cancel reaches the transfer (or already has): nobody is asked about a response of a task that
            // is ending, and its COMPLETE reports `cancelled`.
            return
        }
        response = cacheResponse(response, at: now, into: &actions)
        if held && servedEntry == nil {
            if (300...399).contains(head.status),
                let target = RedirectPolicy.target(location: head.value("Location"), relativeTo: url)
            {
                beginRedirect(to: target, response: response, into: &actions)
                return
            }
            if head.status == 401 || head.status == 407 {
                beginAuthentication(response: response, into: &actions)
                return
            }
        }
        deliverFinal(response, held: held, resumeOffset: resumeOffset, into: &actions)
    }

    // MARK: Redirects

    /// A held 3xx with a usable `Location`: check the limits, build the next request, ask.
    private mutating func beginRedirect(to target: URL, response: TaskResponse, into actions: inout TaskActions) {
        guard let hopRequest = hops.last?.request, let source = hopRequest.url else {
            failHeld(CourierError(.badURL, "the redirected request has no URL"), into: &actions)
            return
        }
        if redirectCount >= RedirectPolicy.maximumRedirects {
            failHeld(
                CourierError(
                    .httpTooManyRedirects,
                    "more than \(RedirectPolicy.maximumRedirects) redirects",
                    failingURL: target
                ),
                into: &actions
            )
            return
        }
        if let refusal = RedirectPolicy.refusal(from: source, to: target) {
            failHeld(refusal, into: &actions)
            return
        }
        let proposed = RedirectPolicy.newRequest(from: hopRequest, status: response.head.status, target: target)
        awaiting = .redirect
        actions.append(.ask(.redirect(hop: hop, response: response, proposed: proposed)))
    }

    /// Follow `request`, or deliver the held 3xx as the final response when it is nil.
    mutating func redirectAnswered(
        _ request: TaskRequest?,
        hop number: Int,
        at now: Date,
        into actions: inout TaskActions
    ) {
        guard awaitedAnswer(hop: number) == .redirect, let held = hops.last?.response,
            let source = hops.last?.request.url
        else {
            return
        }
        awaiting = nil
        guard let request else {
            deliverFinal(held, held: true, resumeOffset: 0, into: &actions)
            return
        }
        guard let target = request.url else {
            failHeld(CourierError(.badURL, "the redirect request has no URL"), into: &actions)
            return
        }
        if let refusal = RedirectPolicy.refusal(from: source, to: target) {
            failHeld(refusal, into: &actions)
            return
        }
        // A credential answered for the previous hop goes along only to the same origin.
        let carried = RedirectPolicy.sameOrigin(source, target) ? authentication : .none
        // Retire the hop before cancelling it, so that its COMPLETE can never pass for the task's end.
        retireCurrentHop(into: &actions)
        let previousHop = hop
        submitHop(request, resumeOffset: 0, authentication: carried, at: now, into: &actions)
        if hop > previousHop {
            redirectCount += 1
        }
    }

    // MARK: Authentication

    /// A held 401/407: offer the challenge, unless Courier cannot answer it or a credential already failed.
    private mutating func beginAuthentication(response: TaskResponse, into actions: inout TaskActions) {
        let forProxy = response.head.status == 407
        let headerName = forProxy ? "Proxy-Authenticate" : "WWW-Authenticate"
        let usedCredential = (forProxy ? proxyAuthentication : authentication) != .none
        if usedCredential {
            failedAuthentications += 1
        }
        guard !usedCredential, let url = hops.last?.request.url,
            let offer = AuthenticationOffer.best(in: response.head.value(headerName) ?? "")
        else {
            // No scheme Courier speaks, or a retry with a credential failed: the 401/407 is the final response.
            deliverFinal(response, held: true, resumeOffset: 0, into: &actions)
            return
        }
        awaiting = .authentication(offer.scheme)
        let challenge = TaskChallenge(
            offer: offer,
            url: url,
            previousFailureCount: failedAuthentications,
            response: response
        )
        actions.append(.ask(.challenge(hop: hop, challenge)))
    }

    mutating func challengeAnswered(
        _ answer: ChallengeAnswer,
        hop number: Int,
        at now: Date,
        into actions: inout TaskActions
    ) {
        guard case .authentication(let scheme)? = awaitedAnswer(hop: number),
            let held = hops.last?.response, let request = hops.last?.request
        else {
            return
        }
        awaiting = nil
        switch answer {
        case .cancel:
            cancelRequested = true
            failHeld(
                CourierError(.cancelled, "the authentication challenge was cancelled", failingURL: request.url),
                into: &actions
            )
        case .withoutCredential:
            deliverFinal(held, held: true, resumeOffset: 0, into: &actions)
        case .credential(let user, let password):
            let credential: TransferSpec.Authentication
            switch scheme {
            case .basic: credential = .basic(user: user, password: password)
            case .digest: credential = .digest(user: user, password: password)
            case .ntlm: credential = .ntlm(user: user, password: password)
            case .negotiate: credential = .negotiate
            }
            let offset = requestedResumeOffset
            retireCurrentHop(into: &actions)
            if held.head.status == 407 {
                // The proxy's: it goes with this hop and every later one; the server's stays as it was.
                proxyAuthentication = credential
                submitHop(request, resumeOffset: offset, authentication: authentication, at: now, into: &actions)
            } else {
                submitHop(request, resumeOffset: offset, authentication: credential, at: now, into: &actions)
            }
        }
    }

    // MARK: The final response

    /// The response whose body the task delivers: record it, release a hold or ask about it.
    mutating func deliverFinal(
        _ response: TaskResponse,
        held: Bool,
        resumeOffset: Int64,
        into actions: inout TaskActions
    ) {
        finalResponse = response
        bodyOffset = resumeOffset
        awaiting = nil
        let status = response.head.status
        if role.kind == .download {
            if requestedResumeOffset > 0 && status == 416
                && TaskMachine.rangeIsComplete(response.head, offset: requestedResumeOffset)
            {
                // Everything is already on disk: finish with the partial file as the download.
                forcedOutcome = .success
                bodyOffset = requestedResumeOffset
                received = 0
                actions.append(.decide(transfer, .cancel))
                return
            }
            if held && requestedResumeOffset > 0 && status != 200 && status != 206 {
                // An error page must not be appended to the partial file: keep the partial and fail (with resume
                // data, so the caller can try again later).
                failHeld(
                    CourierError(
                        .badServerResponse,
                        "the server answered \(status) to the resumed request",
                        failingURL: response.url
                    ),
                    into: &actions
                )
                return
            }
            if held {
                actions.append(.decide(transfer, .allow))
            }
            if resumeSource != nil && !backendResumed {
                let total = expectedToReceive >= 0 ? resumeOffset + expectedToReceive : SessionTask.transferSizeUnknown
                actions.append(.deliver(.resumed(offset: resumeOffset, expectedTotal: total)))
            }
            return
        }
        actions.append(.deliver(.response(response)))
        guard held else {
            return
        }
        if role.asksDisposition {
            awaiting = .disposition
            actions.append(.ask(.disposition(hop: hop, response: response)))
        } else {
            actions.append(.decide(transfer, .allow))
        }
    }

    mutating func dispositionAnswered(_ answer: DispositionAnswer, hop number: Int, into actions: inout TaskActions) {
        guard awaitedAnswer(hop: number) == .disposition else {
            return
        }
        awaiting = nil
        if currentHopServedFromCache {
            servedDispositionAnswered(answer, into: &actions)
            return
        }
        switch answer {
        case .allow:
            actions.append(.decide(transfer, .allow))
        case .cancel:
            cancelRequested = true
            actions.append(.decide(transfer, .cancel))
        case .becomeDownload(let staging):
            // The data task ends silently; ``successorForDownload(staging:)`` continues it, and events that still
            // reach this machine are forwarded to it.
            enter(.completed)
            handedOver = true
            actions.append(.becomeDownload(transfer: transfer, staging: staging))
        }
    }

    /// The machine of the download task that continues this data task after `.becomeDownload`: the same hops,
    /// transfer and counters, now a running download into `staging`, with no body collected.
    func successorForDownload(staging: URL) -> TaskMachine {
        var successor = self
        successor.role = Role(kind: .download, collectsBody: false, asksDisposition: false)
        // A new machine that starts running (this one's `completed` is not left).
        successor.startRunningAsSuccessor()
        successor.handedOver = false
        successor.staging = staging
        successor.bodyChunks = []
        return successor
    }

    /// A 416 whose `Content-Range: bytes */N` says the entity is exactly `offset` bytes long.
    static func rangeIsComplete(_ head: ResponseHead, offset: Int64) -> Bool {
        guard head.value("Content-Range")?.lowercased().hasPrefix("bytes */") == true else {
            return false
        }
        return head.contentRangeTotal == offset
    }

    // MARK: Delayed start

    /// The delegate answered `willBeginDelayedRequest`: the backend begins the transfer (with the new request's URL,
    /// method and headers when there is one), or the task ends cancelled.
    mutating func delayedStartAnswered(_ answer: DelayedStartAnswer, hop number: Int, into actions: inout TaskActions) {
        guard awaitedAnswer(hop: number) == .delayedStart, transfer != 0 else {
            return
        }
        awaiting = nil
        switch answer {
        case .begin:
            actions.append(.decide(transfer, .beginDelayed(nil)))
        case .beginWith(let request):
            currentRequest = request
            actions.append(.decide(transfer, .beginDelayed(request)))
        case .cancel:
            cancel(into: &actions)
        }
    }
}
