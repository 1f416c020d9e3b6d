/// `GET /digest-auth/USER/PASS[?algorithm=SHA-256]`: 401 with a Digest challenge (fresh nonce each time)
/// unless the Authorization header is a correct RFC 7616 `qop=auth` answer to a nonce this server issued.
enum DigestAuthRoute {
    static let realm = "courier"

    static func respond(to request: ReceivedRequest, state: ServerState) -> ResponsePlan {
        let user = request.pathSegments[1]
        let password = request.pathSegments[2]
        guard let algorithm = DigestAuth.Algorithm(parameter: request.queryValue("algorithm")) else {
            return Router.badRequest("algorithm must be MD5 or SHA-256")
        }
        var stale = false
        if let header = request.header("Authorization"), let parameters = DigestAuth.parseAuthorization(header) {
            switch verify(parameters, request: request, user: user, password: password, algorithm: algorithm, state: state) {
            case .accepted:
                return .json(.object([("authenticated", .bool(true)), ("user", .string(user))]))
            case .staleNonce:
                stale = true
            case .rejected:
                break
            }
        }
        let nonce = DigestAuth.makeNonce()
        state.issueNonce(nonce)
        var plan = ResponsePlan.json(.object([("authenticated", .bool(false))]), status: .unauthorized)
        plan.headers.add(
            name: "WWW-Authenticate",
            value: DigestAuth.challenge(realm: realm, nonce: nonce, algorithm: algorithm, stale: stale)
        )
        return plan
    }

    enum Verdict {
        case accepted
        /// The answer is right but for a nonce this server never issued.
        case staleNonce
        case rejected
    }

    static func verify(
        _ parameters: [String: String],
        request: ReceivedRequest,
        user: String,
        password: String,
        algorithm: DigestAuth.Algorithm,
        state: ServerState
    ) -> Verdict {
        guard parameters["username"] == user,
            parameters["realm"] == realm,
            parameters["uri"] == request.head.uri,
            parameters["qop"]?.lowercased() == "auth",
            DigestAuth.Algorithm(parameter: parameters["algorithm"]) == algorithm,
            parameters["opaque"] == nil || parameters["opaque"] == DigestAuth.opaque,
            let nonce = parameters["nonce"],
            let nc = parameters["nc"], nc.count == 8, nc.allSatisfy(\.isHexDigit),
            let cnonce = parameters["cnonce"], !cnonce.isEmpty,
            let response = parameters["response"]
        else { return .rejected }

        let expected = DigestAuth.expectedResponse(
            algorithm: algorithm,
            user: user,
            realm: realm,
            password: password,
            method: request.head.method.rawValue,
            uri: parameters["uri"]!,
            nonce: nonce,
            nc: nc,
            cnonce: cnonce,
            qop: "auth"
        )
        guard response.lowercased() == expected else { return .rejected }
        return state.isIssuedNonce(nonce) ? .accepted : .staleNonce
    }
}
