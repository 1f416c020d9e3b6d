import NIOHTTP1

/// `ANY /echo`: the request body back, with the request's Content-Type.
enum EchoRoute {
    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: request.header("Content-Type") ?? "application/octet-stream")
        var plan = ResponsePlan(status: .ok, headers: headers, body: .buffer(request.body))
        plan.faults.delay = Router.delay(request)
        return plan
    }
}
