internal import HTTPTypes

extension ResponseHead {
    /// The head as swift-http-types' `HTTPResponse`: the status code (no reason phrase: Courier does not keep it;
    /// statuses compare by code), then the header fields in name order, each `Set-Cookie` as a field of its own
    /// and other repeated fields joined with ", ", as in `HTTPURLResponse`. A field whose name is not a valid token
    /// is left out. Nil for a status outside 0…999, which no HTTP response has.
    var httpResponse: HTTPResponse? {
        guard (0...999).contains(status) else {
            return nil
        }
        var fields = HTTPFields()
        fields.reserveCapacity(self.fields.count + setCookies.count)
        for (name, value) in self.fields.sorted(by: { $0.key < $1.key }) {
            guard let fieldName = HTTPField.Name(name) else {
                continue
            }
            if fieldName == .setCookie {
                continue
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        for cookie in setCookies {
            fields.append(HTTPField(name: .setCookie, value: cookie))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: fields)
    }
}
