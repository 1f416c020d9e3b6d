/// `GET /headers`: the request headers as a JSON object, names lower-cased, repeated values joined with ", ".
enum HeadersRoute {
    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        var order: [String] = []
        var values: [String: [String]] = [:]
        for header in request.head.headers {
            let name = header.name.lowercased()
            if values[name] == nil {
                order.append(name)
            }
            values[name, default: []].append(header.value)
        }
        let members = order.map { ($0, JSONValue.string(values[$0]!.joined(separator: ", "))) }
        var plan = ResponsePlan.json(.object(members))
        plan.faults.delay = Router.delay(request)
        return plan
    }
}
