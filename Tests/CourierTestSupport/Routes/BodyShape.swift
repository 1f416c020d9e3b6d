/// `body=` on any route: replaces the body the route made, to give the same response every common shape of
/// "no body" (most frameworks send redirects and challenges with `Content-Length: 0`).
enum BodyShape: String {
    /// The route's own body (the default).
    case route
    /// No body, `Content-Length: 0`.
    case empty
    /// No body, HTTP/1.1 chunked coding with only the last chunk (`0\r\n\r\n`); on HTTP/2 a DATA frame with
    /// END_STREAM and no bytes.
    case chunkedEmpty = "chunked-empty"

    /// Applies `body=` from the query to `plan`; an unknown shape is a 400.
    static func apply(_ request: ReceivedRequest, to plan: ResponsePlan) -> ResponsePlan {
        guard let name = request.queryValue("body") else {
            return plan
        }
        guard let shape = BodyShape(rawValue: name) else {
            return Router.badRequest("body must be route, empty or chunked-empty")
        }
        var shaped = plan
        switch shape {
        case .route:
            break
        case .empty:
            shaped.body = .empty
            shaped.faults.chunked = false
        case .chunkedEmpty:
            shaped.body = .empty
            shaped.faults.chunked = true
        }
        return shaped
    }
}
