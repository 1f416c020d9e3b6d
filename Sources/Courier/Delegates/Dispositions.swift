extension Session {
    /// How a delegate answers an authentication challenge.
    public enum AuthChallengeDisposition: Sendable {
        /// Use the credential passed along (a nil credential continues without one: the 401/407 is delivered).
        case useCredential
        /// Handle it as if there were no delegate: a credential from the URL or the configuration's
        /// `urlCredentialStorage`, else deliver the 401/407 response.
        case performDefaultHandling
        /// Cancel the task (`CourierError.Code.cancelled`).
        case cancelAuthenticationChallenge
        /// Refuse this protection space: the 401/407 response is delivered as the final response.
        case rejectProtectionSpace
    }

    /// How a data task goes on after its response arrived.
    public enum ResponseDisposition: Sendable {
        /// Deliver the body.
        case allow
        /// Cancel the task (`CourierError.Code.cancelled`).
        case cancel
        /// Continue the same transfer as a download task; the delegate is told with
        /// `urlSession(_:dataTask:didBecome:)` and the data task gets no further calls.
        case becomeDownload
    }

    /// How a delegate answers `urlSession(_:task:willBeginDelayedRequest:completionHandler:)`, as
    /// `URLSession.DelayedRequestDisposition`.
    public enum DelayedRequestDisposition: Sendable {
        /// Begin with the original request (the new request passed along is ignored).
        case continueLoading
        /// Begin with the new request passed along (its URL, method and header fields).
        case useNewRequest
        /// Cancel the task (`CourierError.Code.cancelled`).
        case cancel
    }
}
