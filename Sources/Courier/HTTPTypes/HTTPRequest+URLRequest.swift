import Foundation
internal import HTTPTypes

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// The `URLRequest` a task runs for `request`: its URL (scheme, authority, path), method and header fields.
    /// Repeated fields are joined with ", " (`Cookie` with "; "), as a `URLRequest` holds one value per name.
    /// Throws `badURL` when `request` has no scheme or authority (a CONNECT or an `*` request).
    init(courierHTTPRequest request: HTTPRequest) throws {
        guard let url = request.url else {
            throw CourierError(.badURL, "the request has no absolute URL (scheme, authority and path)")
        }
        self.init(url: url)
        if request.method != .get {
            // GET is the default; FoundationNetworking's setter case-folds the method against a list (measurable
            // per request).
            httpMethod = request.method.rawValue
        }
        var fields: [String: String] = [:]
        var names: [HTTPField.Name: String] = [:]
        for field in request.headerFields {
            guard let name = names[field.name] else {
                names[field.name] = field.name.rawName
                fields[field.name.rawName] = field.value
                continue
            }
            let separator = field.name == .cookie ? "; " : ", "
            fields[name, default: ""] += separator + field.value
        }
        if !fields.isEmpty {
            allHTTPHeaderFields = fields
        }
    }
}
