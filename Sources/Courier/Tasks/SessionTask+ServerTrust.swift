import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// ``TaskQuestion/serverTrust(hop:url:_:)``: the session delegate's challenge method, then (when it answers with
    /// its default) the task delegate's; the answer becomes the session's decision about the server.
    func askServerTrust(hop: Int, url: URL, _ report: PeerTrustReport, work: inout DelegateWork) {
        let (host, port) = (url.host ?? "", RedirectPolicy.effectivePort(url))
        guard !report.certificates.isEmpty else {
            // A chain that failed to verify: the next hop reads it (a probe), then the delegate is asked.
            core.serverTrust.withLock { $0.probe(host: host, port: port, verdict: report.verifyResult) }
            send(.serverTrustAnswered(hop: hop, .proceed), work: &work)
            return
        }
        var verdict = report.verifyResult
        if verdict < 0 {
            verdict = core.serverTrust.withLock { $0.probed(host: host, port: port) } ?? verdict
        }
        let trust = ServerTrust(host: host, port: port, certificates: report.certificates, verificationResult: verdict)
        if let leaf = trust.certificates.first, let key = ServerTrust.publicKeyHash(ofCertificate: leaf),
            let decision = core.serverTrust.withLock({ $0.decision(host: trust.host, port: trust.port) }),
            decision.publicKeyHash == key
        {
            // Another task's connection to this server was judged meanwhile (tasks that began together).
            send(.serverTrustAnswered(hop: hop, .proceed), work: &work)
            return
        }
        let challenge = URLAuthenticationChallenge(
            protectionSpace: ServerTrustProtectionSpace(trust, scheme: url.scheme?.lowercased()),
            proposedCredential: nil,
            previousFailureCount: 0,
            failureResponse: nil,
            error: nil,
            sender: ChallengeSender.shared
        )
        let once = OnceFlag()
        work.append { [core] session in
            guard let session else {
                self.send(.serverTrustAnswered(hop: hop, self.decide(trust, .performDefaultHandling, nil)))
                return
            }
            guard let delegate = core.delegate else {
                // A task's own delegate asked for the challenge (a session without a delegate).
                self.askTaskDelegate(challenge, trust: trust, hop: hop, once: once, session: session)
                return
            }
            delegate.urlSession(session, didReceive: challenge) { disposition, credential in
                guard credential === ServerTrustDecisions.sessionDefaultMarker else {
                    guard once.claim() else {
                        return
                    }
                    self.send(.serverTrustAnswered(hop: hop, self.decide(trust, disposition, credential)))
                    return
                }
                self.askTaskDelegate(challenge, trust: trust, hop: hop, once: once, session: session)
            }
        }
    }

    /// The task delegate's turn, on the delegate queue (the session delegate may have answered from another thread).
    private func askTaskDelegate(
        _ challenge: URLAuthenticationChallenge,
        trust: ServerTrust,
        hop: Int,
        once: OnceFlag,
        session: Session
    ) {
        var work = DelegateWork()
        // A task's own delegate judges for its task only: the session does not stop asking for its sake.
        let sessionDelegateAnswers = storage.withLock { $0.ownDelegate == nil }
        work.append { [core] _ in
            guard let delegate = self.taskDelegate else {
                core.serverTrust.withLock { $0.learn(delegateJudges: false) }
                if once.claim() {
                    self.send(.serverTrustAnswered(hop: hop, self.decide(trust, .performDefaultHandling, nil)))
                }
                return
            }
            delegate.urlSession(session, task: self, didReceive: challenge) { disposition, credential in
                guard once.claim() else {
                    return
                }
                if credential === ServerTrustDecisions.taskDefaultMarker, sessionDelegateAnswers {
                    core.serverTrust.withLock { $0.learn(delegateJudges: false) }
                }
                self.send(.serverTrustAnswered(hop: hop, self.decide(trust, disposition, credential)))
            }
        }
        core.dispatcher.enqueue(work)
    }

    /// The session's decision about `trust`'s server for a delegate's answer, and what the task does next.
    private func decide(
        _ trust: ServerTrust,
        _ disposition: Session.AuthChallengeDisposition,
        _ credential: URLCredential?
    ) -> ServerTrustAnswer {
        let isMarker =
            credential === ServerTrustDecisions.sessionDefaultMarker
            || credential === ServerTrustDecisions.taskDefaultMarker
        if !isMarker {
            core.serverTrust.withLock { $0.learn(delegateJudges: true) }
        }
        guard let leaf = trust.certificates.first, let key = ServerTrust.publicKeyHash(ofCertificate: leaf) else {
            return .refuse(CourierError(.serverCertificateUntrusted, "the server's certificate could not be read"))
        }
        switch disposition {
        case .cancelAuthenticationChallenge:
            return .cancel
        case .useCredential where credential != nil && !isMarker:
            core.serverTrust.withLock { $0.record(.accepted(publicKeyHash: key), host: trust.host, port: trust.port) }
            return .proceed
        case .useCredential, .performDefaultHandling, .rejectProtectionSpace:
            guard trust.isTrusted else {
                let reason = trust.verificationFailure ?? "it did not verify"
                return .refuse(
                    CourierError(.serverCertificateUntrusted, "the server's certificate is not trusted: \(reason)")
                )
            }
            core.serverTrust.withLock { $0.record(.verified(publicKeyHash: key), host: trust.host, port: trust.port) }
            return .proceed
        }
    }
}
