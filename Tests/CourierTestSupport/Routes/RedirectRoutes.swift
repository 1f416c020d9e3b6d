import NIOHTTP1

/// `/redirect/N`, `/redirect-to` and `/redirect-loop`.
enum RedirectRoutes {
    /// `GET /redirect/N?to=PATH&status=302`: N redirects in all. `/redirect/N` (N > 1) sends to
    /// `/redirect/N-1` with the same query; `/redirect/1` (and `/redirect/0`) send to PATH (default `/bytes/16`).
    static func hops(_ request: ReceivedRequest) -> ResponsePlan {
        guard let count = Int(request.pathSegments[1]), count >= 0 else {
            return Router.badRequest("/redirect/N needs a non-negative integer N")
        }
        guard let status = redirectStatus(request) else {
            return Router.badRequest("status must be a 3xx code")
        }
        if count > 1 {
            let query = request.rawQuery.isEmpty ? "" : "?" + request.rawQuery
            return .redirect(status, to: "/redirect/\(count - 1)\(query)")
        }
        return .redirect(status, to: request.queryValue("to") ?? "/bytes/16")
    }

    /// `GET /redirect-to?url=U&status=302`: one redirect to U, absolute or relative, as given.
    static func redirectTo(_ request: ReceivedRequest) -> ResponsePlan {
        guard let target = request.queryValue("url"), !target.isEmpty else {
            return Router.badRequest("/redirect-to needs url=")
        }
        guard let status = redirectStatus(request) else {
            return Router.badRequest("status must be a 3xx code")
        }
        return .redirect(status, to: target)
    }

    /// `GET /redirect-loop`: a 302 to itself, forever.
    static func loop(_ request: ReceivedRequest) -> ResponsePlan {
        .redirect(redirectStatus(request) ?? .found, to: "/redirect-loop")
    }

    /// `status=` (default 302), which must be 3xx.
    private static func redirectStatus(_ request: ReceivedRequest) -> HTTPResponseStatus? {
        let code = request.queryInt("status") ?? 302
        guard (300...399).contains(code) else { return nil }
        return HTTPResponseStatus(statusCode: code)
    }
}
