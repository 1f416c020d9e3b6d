import Foundation

/// `GET /basic-auth/USER/PASS`: 401 with a Basic challenge unless the credentials match.
enum BasicAuthRoute {
    static let realm = "courier"

    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        let user = request.pathSegments[1]
        let password = request.pathSegments[2]
        if let credentials = credentials(request.header("Authorization")),
            credentials.user == user, credentials.password == password
        {
            return .json(.object([("authenticated", .bool(true)), ("user", .string(user))]))
        }
        var plan = ResponsePlan.json(.object([("authenticated", .bool(false))]), status: .unauthorized)
        plan.headers.add(name: "WWW-Authenticate", value: "Basic realm=\"\(realm)\"")
        return plan
    }

    /// The user and password of a `Basic` Authorization header.
    static func credentials(_ header: String?) -> (user: String, password: String)? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Data(base64Encoded: parts[1].trimmed(of: " \t")),
            let text = String(data: decoded, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}
