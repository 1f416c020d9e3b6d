import NIOCore
import NIOHTTP1

/// Maps a request to its route (see the table in docs/test-server.md).
enum Router {
    /// What the request handler keeps of a body while it arrives.
    enum BodyMode {
        /// Only count the bytes.
        case count
        /// Keep the bytes (`/echo`).
        case keep
        /// Hash the bytes with SHA-256 (`/upload`).
        case hash
    }

    static func bodyMode(for head: HTTPRequestHead) -> BodyMode {
        let path = ReceivedRequest.splitTarget(ReceivedRequest.originForm(head.uri)).path
        switch path {
        case "/echo": return .keep
        case "/upload": return .hash
        default: return .count
        }
    }

    static func respond(to request: ReceivedRequest, state: ServerState) -> ResponsePlan {
        if request.isProxied, let credential = state.proxyCredential,
            BasicAuthRoute.credentials(request.header("Proxy-Authorization")).map({ "\($0.user):\($0.password)" })
                != credential
        {
            var plan = ResponsePlan.text(.proxyAuthenticationRequired, "proxy authentication required\n")
            plan.headers.add(name: "Proxy-Authenticate", value: "Basic realm=\"proxy\"")
            return plan
        }
        var plan = CacheFields.apply(request, to: BodyShape.apply(request, to: route(request, state: state)))
        if let policy = request.queryValue("hsts") {
            plan.headers.add(name: "Strict-Transport-Security", value: policy)
        }
        if let link = request.queryValue("early-hints") {
            // A 102 Processing, then a 103 Early Hints with the Link field asked for, before the response.
            let processing = HTTPResponseStatus.custom(code: 102, reasonPhrase: "Processing")
            let hints = HTTPResponseStatus.custom(code: 103, reasonPhrase: "Early Hints")
            plan.informational = [
                HTTPResponseHead(version: request.head.version, status: processing),
                HTTPResponseHead(version: request.head.version, status: hints, headers: ["Link": link]),
            ]
        }
        return plan
    }

    private static func route(_ request: ReceivedRequest, state: ServerState) -> ResponsePlan {
        let segments = request.pathSegments
        guard let first = segments.first else { return notFound(request) }
        switch (first, segments.count) {
        case ("bytes", 2):
            return BytesRoute.respond(to: request)
        case ("upload", 1):
            return UploadRoute.respond(to: request)
        case ("echo", 1):
            return EchoRoute.respond(to: request)
        case ("headers", 1):
            return HeadersRoute.respond(to: request)
        case ("redirect", 2):
            return RedirectRoutes.hops(request)
        case ("redirect-to", 1):
            return RedirectRoutes.redirectTo(request)
        case ("redirect-loop", 1):
            return RedirectRoutes.loop(request)
        case ("status", 2):
            return StatusRoute.respond(to: request)
        case ("basic-auth", 3):
            return BasicAuthRoute.respond(to: request)
        case ("ntlm-auth", 3):
            return NTLMAuthRoute.respond(to: request)
        case ("digest-auth", 3):
            return DigestAuthRoute.respond(to: request, state: state)
        case ("cookies", 1):
            return CookieRoutes.list(request)
        case ("cookies", 2) where segments[1] == "set":
            return CookieRoutes.set(request)
        case ("cookies", 2) where segments[1] == "raw":
            return CookieRoutes.raw(request)
        case ("garbage", 1):
            return GarbageRoute.respond(to: request)
        case ("h2", 1):
            return ProtocolRoute.respond(to: request)
        case ("encoded", 3):
            return EncodedRoute.respond(to: request)
        default:
            return notFound(request)
        }
    }

    static func notFound(_ request: ReceivedRequest) -> ResponsePlan {
        .text(.notFound, "no route for \(request.head.method.rawValue) \(request.head.uri)\n")
    }

    static func methodNotAllowed(_ request: ReceivedRequest, allowed: String) -> ResponsePlan {
        var plan = ResponsePlan.text(.methodNotAllowed, "\(request.head.method.rawValue) is not allowed here\n")
        plan.headers.add(name: "Allow", value: allowed)
        return plan
    }

    static func badRequest(_ message: String) -> ResponsePlan {
        .text(.badRequest, message + "\n")
    }

    /// `delay=MS` from the query, for the routes that take it.
    static func delay(_ request: ReceivedRequest) -> TimeAmount? {
        request.queryInt("delay").flatMap { $0 > 0 ? .milliseconds(Int64($0)) : nil }
    }
}
