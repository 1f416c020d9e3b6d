/// `GET /h2`: which HTTP version the connection speaks, `{"httpVersion":"2"}` or `"1.1"`.
enum ProtocolRoute {
    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        .json(.object([("httpVersion", .string(request.httpVersionString))]))
    }
}
