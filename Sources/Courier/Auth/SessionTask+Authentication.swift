import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// A held 401/407: offer the challenge to the delegate (or answer it by default).
    func beginAuthentication(
        response: HTTPURLResponse,
        head: ResponseHead,
        transfer: UInt64,
        hop: Int,
        work: inout DelegateWork
    ) {
        let headerName = head.status == 407 ? "Proxy-Authenticate" : "WWW-Authenticate"
        let (request, usedCredential, failures) = storage.withLock { state -> (URLRequest?, Bool, Int) in
            var used = false
            if case .none = state.authentication {
                used = false
            } else {
                used = true
                state.failedAuthentications += 1
            }
            return (state.hops.last?.request, used, state.failedAuthentications)
        }
        guard let request, let url = request.url,
            let offer = AuthenticationOffer.best(in: head.value(headerName) ?? ""),
            !usedCredential
        else {
            // No scheme Courier speaks, or a retry with a credential failed: the 401/407 is the final response.
            deliverHeldAsFinal(response, head: head, transfer: transfer, hop: hop, work: &work)
            return
        }
        let space = URLProtectionSpace(
            host: url.host ?? "",
            port: RedirectPolicy.effectivePort(url),
            protocol: url.scheme?.lowercased(),
            realm: offer.realm,
            authenticationMethod: offer.authenticationMethod
        )
        let proposed = defaultCredential(for: space, url: url)
        storage.withLock { $0.awaiting = .authentication }
        // Every way out of the challenge continues the same exchange.
        let proceed: @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void = { disposition, credential in
            self.continueAuthentication(
                disposition,
                credential,
                offer: offer,
                space: space,
                request: request,
                response: response,
                head: head,
                transfer: transfer,
                hop: hop
            )
        }
        guard core.isTaskDelegate else {
            proceed(.performDefaultHandling, nil)
            return
        }
        let challenge = URLAuthenticationChallenge(
            protectionSpace: space,
            proposedCredential: proposed,
            previousFailureCount: failures,
            failureResponse: response,
            error: nil,
            sender: ChallengeSender.shared
        )
        let once = OnceFlag()
        work.append { [core] session in
            guard let session, let delegate = core.taskDelegate else {
                proceed(.performDefaultHandling, nil)
                return
            }
            delegate.urlSession(session, task: self, didReceive: challenge) { disposition, credential in
                guard once.claim() else {
                    return
                }
                proceed(disposition, credential)
            }
        }
    }

    /// A credential from the URL (`user:password@`) or from the configuration's credential storage.
    func defaultCredential(for space: URLProtectionSpace, url: URL) -> URLCredential? {
        let original = storage.withLock { $0.originalRequest?.url }
        if let original, let user = original.user, RedirectPolicy.sameOrigin(original, url) {
            let password = original.password?.removingPercentEncoding ?? original.password ?? ""
            return URLCredential(user: user.removingPercentEncoding ?? user, password: password, persistence: .none)
        }
        return core.configuration.urlCredentialStorage?.credential(for: space)
    }

    func continueAuthentication(
        _ disposition: Session.AuthChallengeDisposition,
        _ credential: URLCredential?,
        offer: AuthenticationOffer,
        space: URLProtectionSpace,
        request: URLRequest,
        response: HTTPURLResponse,
        head: ResponseHead,
        transfer: UInt64,
        hop: Int
    ) {
        let live = storage.withLock { state -> Bool in
            guard state.hop == hop, state.awaiting == .authentication, state.phase == .running,
                !state.cancelRequested
            else {
                return false
            }
            state.awaiting = nil
            return true
        }
        guard live else {
            return
        }
        var work = DelegateWork()
        defer { core.dispatcher.enqueue(work) }
        var chosen: URLCredential?
        switch disposition {
        case .useCredential:
            chosen = credential
        case .performDefaultHandling:
            chosen = request.url.flatMap { defaultCredential(for: space, url: $0) }
        case .rejectProtectionSpace:
            chosen = nil
        case .cancelAuthenticationChallenge:
            storage.withLock { $0.cancelRequested = true }
            failHeld(
                CourierError(.cancelled, "the authentication challenge was cancelled", failingURL: request.url),
                transfer: transfer
            )
            return
        }
        guard let chosen, let user = chosen.user else {
            deliverHeldAsFinal(response, head: head, transfer: transfer, hop: hop, work: &work)
            return
        }
        let password = chosen.password ?? ""
        let authentication: TransferSpec.Authentication
        switch offer.scheme {
        case .basic: authentication = .basic(user: user, password: password)
        case .digest: authentication = .digest(user: user, password: password)
        }
        let offset = storage.withLock { state -> Int64 in
            _ = state.retireCurrentHop()
            return state.requestedResumeOffset
        }
        core.runningEngine?.cancel(transfer)
        submitHop(request, resumeOffset: offset, authentication: authentication)
    }
}
