import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// A held 3xx with a usable `Location`: check the limits, build the next request, ask the delegate.
    func beginRedirect(
        to target: URL,
        response: HTTPURLResponse,
        head: ResponseHead,
        transfer: UInt64,
        hop: Int,
        work: inout DelegateWork
    ) {
        let (count, hopRequest) = storage.withLock { state in
            (state.redirectCount, state.hops.last?.request ?? state.currentRequest)
        }
        guard let hopRequest, let source = hopRequest.url else {
            // Unreachable (every hop has a request with a URL); never leave a held transfer waiting.
            failHeld(CourierError(.badURL, "the redirected request has no URL"), transfer: transfer)
            return
        }
        if count >= RedirectPolicy.maximumRedirects {
            failHeld(
                CourierError(
                    .httpTooManyRedirects,
                    "more than \(RedirectPolicy.maximumRedirects) redirects",
                    failingURL: target
                ),
                transfer: transfer
            )
            return
        }
        if let refusal = RedirectPolicy.refusal(from: source, to: target) {
            failHeld(refusal, transfer: transfer)
            return
        }
        let proposed = RedirectPolicy.newRequest(from: hopRequest, status: head.status, target: target)
        storage.withLock { $0.awaiting = .redirect }
        // Every way out of the delegate's decision continues the same exchange.
        let proceed: @Sendable (URLRequest?) -> Void = { request in
            self.continueRedirect(request, from: source, response: response, head: head, transfer: transfer, hop: hop)
        }
        guard core.isTaskDelegate else {
            proceed(proposed)
            return
        }
        let once = OnceFlag()
        work.append { [core] session in
            guard let session, let delegate = core.taskDelegate else {
                proceed(proposed)
                return
            }
            delegate.urlSession(session, task: self, willPerformHTTPRedirection: response, newRequest: proposed) {
                request in
                guard once.claim() else {
                    return
                }
                proceed(request)
            }
        }
    }

    /// The delegate's answer (or the default): follow `request`, or deliver the 3xx when it is nil.
    func continueRedirect(
        _ request: URLRequest?,
        from source: URL,
        response: HTTPURLResponse,
        head: ResponseHead,
        transfer: UInt64,
        hop: Int
    ) {
        let live = storage.withLock { state -> Bool in
            guard state.hop == hop, state.awaiting == .redirect, state.phase == .running, !state.cancelRequested
            else {
                return false
            }
            state.awaiting = nil
            if request != nil {
                state.redirectCount += 1
            }
            return true
        }
        guard live else {
            return
        }
        var work = DelegateWork()
        defer { core.dispatcher.enqueue(work) }
        guard let request else {
            deliverHeldAsFinal(response, head: head, transfer: transfer, hop: hop, work: &work)
            return
        }
        guard let target = request.url else {
            failHeld(CourierError(.badURL, "the redirect request has no URL"), transfer: transfer)
            return
        }
        if let refusal = RedirectPolicy.refusal(from: source, to: target) {
            failHeld(refusal, transfer: transfer)
            return
        }
        // Retire the hop before cancelling it, so that its COMPLETE can never pass for the task's end.
        // A credential answered for the previous hop goes along only to the same origin.
        let authentication = storage.withLock { state -> TransferSpec.Authentication in
            _ = state.retireCurrentHop()
            return RedirectPolicy.sameOrigin(source, target) ? state.authentication : .none
        }
        core.runningEngine?.cancel(transfer)
        submitHop(request, resumeOffset: 0, authentication: authentication)
    }

    /// Ends a task whose held response cannot go on: the engine cancels the transfer and its COMPLETE reports
    /// `error`.
    func failHeld(_ error: CourierError, transfer: UInt64) {
        storage.withLock { state in
            state.forcedOutcome = .failure(error)
            state.awaiting = nil
        }
        core.runningEngine?.cancel(transfer)
    }
}
