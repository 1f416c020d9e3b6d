/// `GET /cookies/set?name=value&…` and `GET /cookies`.
enum CookieRoutes {
    /// One `Set-Cookie: name=value; Path=/` per query pair; the body lists them as JSON.
    static func set(_ request: ReceivedRequest) -> ResponsePlan {
        var plan = ResponsePlan.json(.object(request.query.map { ($0.name, .string($0.value)) }))
        for pair in request.query {
            plan.headers.add(name: "Set-Cookie", value: "\(pair.name)=\(pair.value); Path=/")
        }
        return plan
    }

    /// Each `v` query value as a `Set-Cookie` field as it is (attributes and all): a server setting what a test
    /// needs, hostile ones included.
    static func raw(_ request: ReceivedRequest) -> ResponsePlan {
        var plan = ResponsePlan.text(.ok, "set\n")
        for pair in request.query where pair.name == "v" {
            plan.headers.add(name: "Set-Cookie", value: pair.value)
        }
        return plan
    }

    /// The cookies the request carried, as a JSON object (a repeated name keeps its last value).
    static func list(_ request: ReceivedRequest) -> ResponsePlan {
        var order: [String] = []
        var values: [String: String] = [:]
        for header in request.head.headers[canonicalForm: "cookie"] {
            for pair in header.split(separator: ";") {
                let pair = pair.trimmed(of: " \t")
                guard !pair.isEmpty else { continue }
                let name: String
                let value: String
                if let equals = pair.firstIndex(of: "=") {
                    name = String(pair[..<equals])
                    value = String(pair[pair.index(after: equals)...])
                } else {
                    name = pair
                    value = ""
                }
                if values[name] == nil {
                    order.append(name)
                }
                values[name] = value
            }
        }
        return .json(.object(order.map { ($0, .string(values[$0]!)) }))
    }
}
