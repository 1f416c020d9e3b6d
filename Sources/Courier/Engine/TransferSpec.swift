internal import CSupport
import Foundation

/// Everything the engine needs for one HTTP exchange (one hop), as a Swift value.
///
/// Built by a task for each hop and handed to ``Engine/submit(_:)``, which turns it into a `cr_request_t`.
struct TransferSpec: Sendable {
    enum Sink: Sendable {
        case memory
        case file(descriptor: Int32)
        case discard
    }

    enum Authentication: Sendable {
        case none
        case basic(user: String, password: String)
        case digest(user: String, password: String)
    }

    var url: String
    var method: String = "GET"
    /// "Name: value" lines, already merged (request, session additional headers, cookies).
    var headers: [String] = []
    var body: Data?
    /// A file descriptor to send the body from; ownership passes to the engine when the submit succeeds.
    var bodyDescriptor: Int32 = -1
    var bodyDescriptorLength: Int64 = 0
    var sink: Sink = .memory
    var resumeOffset: Int64 = 0
    var holdRedirectAndAuth = true
    var askResponse = false
    var noBody = false
    /// Offer the content codings libcurl decodes and hand over decoded bytes (`CR_FLAG_DECODE`).
    var decodesContent = true
    var http2 = true
    var authentication: Authentication = .none
    var idleTimeoutMilliseconds: Int64 = 0
    var totalTimeoutMilliseconds: Int64 = 0
    var priority: Int32 = 0
    var tag: UInt64 = 0

    var flags: UInt32 {
        var flags: UInt32 = 0
        if askResponse { flags |= UInt32(CR_FLAG_ASK_RESPONSE) }
        if holdRedirectAndAuth { flags |= UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH) }
        if noBody { flags |= UInt32(CR_FLAG_NO_BODY) }
        if decodesContent { flags |= UInt32(CR_FLAG_DECODE) }
        if http2 { flags |= UInt32(CR_FLAG_HTTP2) }
        return flags
    }
}
