import NIOHTTP1

/// `ANY /status/CODE?retryAfter=S`: that status with a small text body, `Retry-After: S` if given.
enum StatusRoute {
    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        guard let code = Int(request.pathSegments[1]), (200...599).contains(code) else {
            return Router.badRequest("/status/CODE needs a code from 200 to 599")
        }
        let status = HTTPResponseStatus(statusCode: code)
        var plan: ResponsePlan
        if ResponseWriter.mayHaveBody(status) {
            plan = .text(status, "\(code) \(status.reasonPhrase)\n")
        } else {
            plan = ResponsePlan(status: status)
        }
        if let retryAfter = request.queryValue("retryAfter") {
            plan.headers.add(name: "Retry-After", value: retryAfter)
        }
        plan.faults.delay = Router.delay(request)
        return plan
    }
}
