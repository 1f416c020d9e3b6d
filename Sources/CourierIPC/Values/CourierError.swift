public import Foundation

/// The one error type of Courier.
///
/// Every failure a session, a task or an async convenience reports is a `CourierError`. Its ``code`` plays the
/// role of `URLError.Code` and keeps `URLError`'s raw values where one exists, so code that switches on
/// `URLError` ports by renaming. The underlying libcurl code is in ``curlCode`` when the failure came from curl,
/// and a download that could be resumed carries its ``resumeData``.
public struct CourierError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// A stable error code, in the spirit of `URLError.Code`.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: Int

        public init(rawValue: Int) {
            self.rawValue = rawValue
        }

        /// The task was cancelled (`cancel()`, `invalidateAndCancel()`, a `.cancel` disposition, Swift task
        /// cancellation, or the session was released).
        public static let cancelled = Code(rawValue: -999)
        /// The URL could not be parsed, or is not absolute.
        public static let badURL = Code(rawValue: -1000)
        /// No byte moved for `timeoutIntervalForRequest`, or the whole task outlived `timeoutIntervalForResource`.
        public static let timedOut = Code(rawValue: -1001)
        /// The URL's scheme is not `http` or `https`, or a redirect pointed to such a URL.
        public static let unsupportedURL = Code(rawValue: -1002)
        /// The host name could not be resolved.
        public static let cannotFindHost = Code(rawValue: -1003)
        /// The connection was refused or could not be made.
        public static let cannotConnectToHost = Code(rawValue: -1004)
        /// The connection closed or was reset mid-exchange, or the body was shorter than announced.
        public static let networkConnectionLost = Code(rawValue: -1005)
        /// No network reaches the host: the system has no route to it (`ENETUNREACH`, `ENETDOWN`). A session with
        /// `waitsForConnectivity` waits for one instead of failing.
        public static let notConnectedToInternet = Code(rawValue: -1009)
        /// The resource is not available: a request whose cache policy is `.returnCacheDataDontLoad` (or that
        /// says `Cache-Control: only-if-cached`) found nothing in the URL cache.
        public static let resourceUnavailable = Code(rawValue: -1008)
        /// More than 16 redirects, or a redirect loop.
        public static let httpTooManyRedirects = Code(rawValue: -1007)
        /// A redirect from `https` to `http` was refused.
        public static let insecureRedirect = Code(rawValue: -3106)
        /// The server sent something that is not valid HTTP, or conflicting lengths.
        public static let badServerResponse = Code(rawValue: -1011)
        /// The user cancelled an authentication. Courier does not report it: a delegate's
        /// `.cancelAuthenticationChallenge` ends the task with ``cancelled``, as Apple's URLSession does.
        public static let userCancelledAuthentication = Code(rawValue: -1012)
        /// Authentication was required and no credential was available.
        public static let userAuthenticationRequired = Code(rawValue: -1013)
        /// The response body's content coding (`gzip`, `deflate`, `br`, `zstd`) was corrupt or unknown.
        public static let cannotDecodeContentData = Code(rawValue: -1016)
        /// A body was larger than allowed: the server announced or sent more than the limit set for it.
        public static let dataLengthExceedsMaximum = Code(rawValue: -1103)
        /// The request body had to be sent again (a redirect or an authentication round trip that kept the
        /// method) and could not be rewound.
        public static let requestBodyStreamExhausted = Code(rawValue: -1021)
        /// The server asked for a client certificate (TLS) and none was given.
        public static let clientCertificateRequired = Code(rawValue: -1206)
        /// A file (an upload body, a resume file) does not exist.
        public static let fileDoesNotExist = Code(rawValue: -1100)
        /// The TLS handshake failed.
        public static let secureConnectionFailed = Code(rawValue: -1200)
        /// The server's certificate is not trusted or does not match the host.
        public static let serverCertificateUntrusted = Code(rawValue: -1202)
        /// A file (the download's staging file) could not be created.
        public static let cannotCreateFile = Code(rawValue: -3000)
        /// A file could not be opened.
        public static let cannotOpenFile = Code(rawValue: -3001)
        /// A file could not be moved to its destination.
        public static let cannotMoveFile = Code(rawValue: -3005)
        /// Writing the downloaded bytes failed.
        public static let cannotWriteToFile = Code(rawValue: -3003)
        /// Reading a file (an upload body) failed.
        public static let cannotReadFile = Code(rawValue: -3002)
        /// Resume data is malformed, of an unknown version, or its partial file is gone or changed size.
        public static let cannotResume = Code(rawValue: -3100)
        /// The entity changed on the server while resuming, or a partial file was changed outside Courier.
        public static let fileChanged = Code(rawValue: -3101)
        /// A download's file is not what was expected: its digest differs from `DownloadTask`'s
        /// `expectedChecksum` or from the one the server announced (`Repr-Digest`, `Content-Digest`, `Digest`).
        /// The file is deleted; no resume data is made.
        public static let checksumMismatch = Code(rawValue: -3110)
        /// The disk is full.
        public static let insufficientSpace = Code(rawValue: -3102)
        /// Another live background session uses the same identifier.
        public static let backgroundSessionInUse = Code(rawValue: -996)
        /// courierd, the background transfer service, could not be reached: none is running and none could be started
        /// (no `courierd` executable found — the message says where it was looked for and what to run — or it did
        /// not come up), or it stayed away longer than the session's request timeout.
        public static let backgroundSessionWasDisconnected = Code(rawValue: -997)
        /// The operation is not available in a background session.
        public static let unsupportedInBackgroundSession = Code(rawValue: -3104)
        /// The session was invalidated; it accepts no new tasks.
        public static let sessionInvalidated = Code(rawValue: -3105)
        /// An unexpected failure inside the transfer engine; see ``CourierError/curlCode``.
        public static let unknown = Code(rawValue: -1)

        public var description: String {
            Code.names[rawValue] ?? "code(\(rawValue))"
        }

        private static let names: [Int: String] = [
            -999: "cancelled", -1000: "badURL", -1001: "timedOut", -1002: "unsupportedURL",
            -1003: "cannotFindHost", -1004: "cannotConnectToHost", -1005: "networkConnectionLost",
            -1008: "resourceUnavailable",
            -3110: "checksumMismatch",
            -1009: "notConnectedToInternet",
            -1007: "httpTooManyRedirects", -1011: "badServerResponse",
            -1012: "userCancelledAuthentication", -1013: "userAuthenticationRequired",
            -1016: "cannotDecodeContentData", -1100: "fileDoesNotExist", -1200: "secureConnectionFailed",
            -1103: "dataLengthExceedsMaximum", -1021: "requestBodyStreamExhausted",
            -1206: "clientCertificateRequired",
            -1202: "serverCertificateUntrusted", -3000: "cannotCreateFile", -3001: "cannotOpenFile",
            -3002: "cannotReadFile", -3003: "cannotWriteToFile", -3005: "cannotMoveFile", -3100: "cannotResume",
            -3101: "fileChanged", -3102: "insufficientSpace", -996: "backgroundSessionInUse",
            -997: "backgroundSessionWasDisconnected",
            -3104: "unsupportedInBackgroundSession", -3105: "sessionInvalidated", -3106: "insecureRedirect",
            -1: "unknown",
        ]
    }

    /// What went wrong.
    public var code: Code
    /// The libcurl `CURLcode` behind the failure, when it came from curl.
    public var curlCode: Int?
    /// The `errno` behind a file failure, when there is one.
    public var osError: Int32?
    /// Resume data for `Session.downloadTask(withResumeData:)`, when the failed download can be resumed.
    public var resumeData: Data?
    /// The URL the task was fetching when it failed.
    public var failingURL: URL?
    /// A short human-readable explanation.
    public var message: String
    /// Why courierd cancelled a background task on its own; nil for every other error.
    public var backgroundTaskCancelledReason: BackgroundTaskCancelledReason?

    public init(
        _ code: Code,
        _ message: String = "",
        curlCode: Int? = nil,
        osError: Int32? = nil,
        resumeData: Data? = nil,
        failingURL: URL? = nil
    ) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
        self.osError = osError
        self.resumeData = resumeData
        self.failingURL = failingURL
    }

    public var description: String {
        var text = "CourierError.\(code)"
        if !message.isEmpty {
            text += ": \(message)"
        }
        if let curlCode {
            text += " (curl \(curlCode))"
        }
        if let osError {
            text += " (errno \(osError))"
        }
        if let failingURL {
            text += " [\(failingURL.absoluteString)]"
        }
        if resumeData != nil {
            text += " [resumable]"
        }
        if let backgroundTaskCancelledReason {
            text += " [\(backgroundTaskCancelledReason)]"
        }
        return text
    }

    /// Matches an error by code: `if CourierError.Code.timedOut ~= error { ... }`.
    public static func ~= (code: Code, error: CourierError) -> Bool {
        error.code == code
    }
}
