import Foundation

/// Everything a backend needs for one HTTP exchange (one hop of a task), as a serialisable value.
///
/// Built by a task for each hop and handed to ``TransferBackend/submit(_:as:)``. Files are named by path, never by
/// descriptor, so that a spec means the same thing in another process (the daemon backend).
struct TransferSpec: Codable, Sendable, Equatable {
    /// What the request body is read from.
    enum Body: Codable, Sendable, Equatable {
        case none
        /// Sent as it is; the backend reads it in place, without a second copy.
        case data(Data)
        /// Sent from the file at `path`, whose length at submit time is the body's length.
        case file(path: String)
    }

    /// Where the response body goes.
    enum Sink: Codable, Sendable, Equatable {
        /// Delivered in DATA events.
        case memory
        /// Written to the file at `path`; `append` keeps the bytes already there (a resumed download).
        case file(path: String, append: Bool)
        case discard
    }

    enum Authentication: Codable, Sendable, Equatable {
        case none
        case basic(user: String, password: String)
        case digest(user: String, password: String)
    }

    /// What a backend that keeps the task beyond this process (courierd) needs of the task itself: set for
    /// background sessions only.
    struct TaskDetails: Codable, Sendable, Equatable {
        enum Kind: String, Codable, Sendable {
            case data
            case upload
            case download
        }

        var kind: Kind
        var taskDescription: String?
        var priority: Float
        /// From `downloadTask(withResumeData:)`: the backend goes on from the partial file it names.
        var resumeData: Data?
        /// The task reports to the session's delegate (it has no completion handler).
        var reportsToDelegate: Bool
    }

    var url: String
    var method: String = "GET"
    /// "Name: value" lines, already merged (request, session additional headers, cookies).
    var headers: [String] = []
    var body: Body = .none
    var sink: Sink = .memory
    var resumeOffset: Int64 = 0
    /// Hold 3xx with a Location and 401/407 for the task to decide (`CR_FLAG_HOLD_REDIRECT_AND_AUTH`).
    var holdRedirectAndAuth = true
    /// Hold every final response until ``TransferBackend/decide(_:_:)`` (`CR_FLAG_ASK_RESPONSE`).
    var askResponse = false
    var noBody = false
    /// Offer the content codings libcurl decodes and hand over decoded bytes (`CR_FLAG_DECODE`).
    var decodesContent = true
    var http2 = true
    var authentication: Authentication = .none
    var idleTimeoutMilliseconds: Int64 = 0
    var totalTimeoutMilliseconds: Int64 = 0
    var priority: Int32 = 0
    var task: TaskDetails?
}
