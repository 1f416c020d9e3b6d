internal import HTTPTypes

extension ResponseHead {
    /// The head as swift-http-types' `HTTPResponse`: the status code (no reason phrase: Courier does not keep it;
    /// statuses compare by code), then the header fields as they arrived, in order, a repeated field once per line
    /// (as `HTTPFields` holds them). A field whose name is not a valid token is left out. Nil for a status outside
    /// 0…999, which no HTTP response has.
    var httpResponse: HTTPResponse? {
        guard (0...999).contains(status) else {
            return nil
        }
        var fields = HTTPFields()
        fields.reserveCapacity(fieldLines.count)
        for line in fieldLines {
            if let name = HTTPField.Name(line.name) {
                fields.append(HTTPField(name: name, value: line.value))
            }
        }
        return HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: fields)
    }
}
