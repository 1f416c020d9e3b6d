import Foundation
internal import HTTPTypes

extension TaskRequest {
    /// The request a task runs for `request`: its URL (scheme, authority, path), method and header fields, with
    /// no `URLRequest` in between. Repeated fields are joined with ", " (`Cookie` with "; "): a task's request
    /// holds one value per name, as a `URLRequest` does. Throws `badURL` when `request` has no scheme or authority
    /// (a CONNECT or an `*` request).
    init(courierHTTPRequest request: HTTPRequest) throws {
        guard let url = request.url else {
            throw CourierError(.badURL, "the request has no absolute URL (scheme, authority and path)")
        }
        // Keyed by the field name (case-insensitive); the key carries the first spelling, as sent.
        var joined: [HTTPField.Name: String] = [:]
        for field in request.headerFields {
            if let value = joined[field.name] {
                joined[field.name] = value + (field.name == .cookie ? "; " : ", ") + field.value
            } else {
                joined[field.name] = field.value
            }
        }
        var fields: [String: String] = [:]
        if !joined.isEmpty {
            fields.reserveCapacity(joined.count)
            for (name, value) in joined {
                fields[name.rawName] = value
            }
        }
        self.init(url: url, method: request.method.rawValue, headerFields: fields)
    }
}
