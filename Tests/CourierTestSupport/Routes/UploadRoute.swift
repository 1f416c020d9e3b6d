/// `POST/PUT /upload`: reads the whole body and answers its length and SHA-256.
enum UploadRoute {
    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        guard request.head.method == .POST || request.head.method == .PUT else {
            return Router.methodNotAllowed(request, allowed: "POST, PUT")
        }
        var plan = ResponsePlan.json(
            .object([
                ("length", .int(request.bodyLength)),
                ("sha256", .string(request.bodySHA256 ?? "")),
                ("method", .string(request.head.method.rawValue)),
            ])
        )
        plan.faults.delay = Router.delay(request)
        return plan
    }
}
