import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// Asks the delegate on the delegate queue, or answers by default at once when there is no delegate to ask.
    /// The first answer goes back to the machine; a second call of a completion handler is ignored.
    func ask(_ question: TaskQuestion, work: inout DelegateWork) {
        switch question {
        case .redirect(let hop, let response, let proposed):
            askRedirect(hop: hop, response: response, proposed: proposed, work: &work)
        case .challenge(let hop, let challenge):
            askChallenge(hop: hop, challenge, work: &work)
        case .serverTrust(let hop, let url, let report):
            askServerTrust(hop: hop, url: url, report, work: &work)
        case .disposition(let hop, let response):
            askDisposition(hop: hop, response: response, work: &work)
        case .delayedStart(let hop, let request):
            askDelayedStart(hop: hop, request: request, work: &work)
        }
    }

    // MARK: Delayed start

    private func askDelayedStart(hop: Int, request: TaskRequest, work: inout DelegateWork) {
        guard hasTaskDelegate else {
            send(.delayedStartAnswered(hop: hop, .begin), work: &work)
            return
        }
        let once = OnceFlag()
        work.append { session in
            guard let session, let delegate = self.taskDelegate else {
                self.send(.delayedStartAnswered(hop: hop, .begin))
                return
            }
            delegate.urlSession(session, task: self, willBeginDelayedRequest: request.urlRequest) { disposition, new in
                guard once.claim() else {
                    return
                }
                let answer: DelayedStartAnswer
                switch disposition {
                case .continueLoading: answer = .begin
                case .useNewRequest: answer = new.map { .beginWith(TaskRequest($0)) } ?? .begin
                case .cancel: answer = .cancel
                }
                self.send(.delayedStartAnswered(hop: hop, answer))
            }
        }
    }

    // MARK: Redirects

    private func askRedirect(hop: Int, response: TaskResponse, proposed: TaskRequest, work: inout DelegateWork) {
        guard hasTaskDelegate, let httpResponse = response.httpResponse else {
            send(.redirectAnswered(hop: hop, proposed), work: &work)
            return
        }
        let once = OnceFlag()
        work.append { session in
            guard let session, let delegate = self.taskDelegate else {
                self.send(.redirectAnswered(hop: hop, proposed))
                return
            }
            delegate.urlSession(
                session,
                task: self,
                willPerformHTTPRedirection: httpResponse,
                newRequest: proposed.urlRequest
            ) { request in
                guard once.claim() else {
                    return
                }
                self.send(.redirectAnswered(hop: hop, request.map(TaskRequest.init)))
            }
        }
    }

    // MARK: Authentication

    private func askChallenge(hop: Int, _ challenge: TaskChallenge, work: inout DelegateWork) {
        let url = challenge.url
        let space: URLProtectionSpace
        if challenge.response.head.status == 407,
            let proxy = ProxySettings.endpoint(for: url, settings: core.configuration.proxySettings)
        {
            space = URLProtectionSpace(
                proxyHost: proxy.host,
                port: proxy.port,
                type: NSURLProtectionSpaceHTTPProxy,
                realm: challenge.offer.realm,
                authenticationMethod: challenge.offer.authenticationMethod
            )
        } else {
            space = URLProtectionSpace(
                host: url.host ?? "",
                port: RedirectPolicy.effectivePort(url),
                protocol: url.scheme?.lowercased(),
                realm: challenge.offer.realm,
                authenticationMethod: challenge.offer.authenticationMethod
            )
        }
        guard hasTaskDelegate, let failureResponse = challenge.response.httpResponse else {
            let answer = answer(.performDefaultHandling, nil, space: space, url: url)
            send(.challengeAnswered(hop: hop, answer), work: &work)
            return
        }
        let offered = URLAuthenticationChallenge(
            protectionSpace: space,
            proposedCredential: defaultCredential(for: space, url: url),
            previousFailureCount: challenge.previousFailureCount,
            failureResponse: failureResponse,
            error: nil,
            sender: ChallengeSender.shared
        )
        let once = OnceFlag()
        work.append { session in
            guard let session, let delegate = self.taskDelegate else {
                let answer = self.answer(.performDefaultHandling, nil, space: space, url: url)
                self.send(.challengeAnswered(hop: hop, answer))
                return
            }
            delegate.urlSession(session, task: self, didReceive: offered) { disposition, credential in
                guard once.claim() else {
                    return
                }
                self.send(.challengeAnswered(hop: hop, self.answer(disposition, credential, space: space, url: url)))
            }
        }
    }

    /// A delegate's disposition as the machine's answer: the credential it chose, or the default one.
    private func answer(
        _ disposition: Session.AuthChallengeDisposition,
        _ credential: URLCredential?,
        space: URLProtectionSpace,
        url: URL
    ) -> ChallengeAnswer {
        let chosen: URLCredential?
        switch disposition {
        case .useCredential:
            chosen = credential
            // Kept for the next challenge of this space, as URLSession keeps it (in memory, or `.permanent` on disk).
            if let credential, credential.persistence != .none, credential.user != nil {
                core.configuration.urlCredentialStorage?.set(credential, for: space)
            }
        case .performDefaultHandling:
            chosen = defaultCredential(for: space, url: url)
        case .rejectProtectionSpace:
            chosen = nil
        case .cancelAuthenticationChallenge:
            return .cancel
        }
        guard let chosen, let user = chosen.user else {
            return .withoutCredential
        }
        return .credential(user: user, password: chosen.password ?? "")
    }

    /// A credential from the URL (`user:password@`) or from the configuration's credential storage.
    private func defaultCredential(for space: URLProtectionSpace, url: URL) -> URLCredential? {
        let original = storage.withLock { $0.originalRequest?.url }
        if let original, let user = original.user, RedirectPolicy.sameOrigin(original, url) {
            let password = original.password?.removingPercentEncoding ?? original.password ?? ""
            return URLCredential(user: user.removingPercentEncoding ?? user, password: password, persistence: .none)
        }
        return core.configuration.urlCredentialStorage?.credential(for: space)
    }

    // MARK: Disposition

    private func askDisposition(hop: Int, response: TaskResponse, work: inout DelegateWork) {
        guard let dataTask = self as? DataTask, let httpResponse = response.httpResponse else {
            send(.dispositionAnswered(hop: hop, .allow), work: &work)
            return
        }
        let once = OnceFlag()
        work.append { session in
            guard let session, let delegate = dataTask.delegate(as: (any SessionDataDelegate).self) else {
                self.send(.dispositionAnswered(hop: hop, .allow))
                return
            }
            delegate.urlSession(session, dataTask: dataTask, didReceive: httpResponse) { disposition in
                guard once.claim() else {
                    return
                }
                self.answerDisposition(disposition, hop: hop)
            }
        }
    }

    private func answerDisposition(_ disposition: Session.ResponseDisposition, hop: Int) {
        switch disposition {
        case .allow:
            send(.dispositionAnswered(hop: hop, .allow))
        case .cancel:
            send(.dispositionAnswered(hop: hop, .cancel))
        case .becomeDownload:
            switch core.makeStagingFile() {
            case .success(let staging):
                handOverToDownload(hop: hop, staging: staging)
            case .failure(let error):
                send(.heldFailed(hop: hop, error))
            }
        }
    }
}
