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
        // Keyed by the field name (case-insensitive); the key kept is the first spelling, as sent.
        var joined: [HTTPField.Name: String] = [:]
        for field in request.headerFields {
            if let value = joined[field.name] {
                joined[field.name] = value + (field.name == .cookie ? "; " : ", ") + field.value
            } else {
                joined[field.name] = field.value
            }
        }
        let fields = Dictionary(uniqueKeysWithValues: joined.map { ($0.key.rawName, $0.value) })
        if !fields.isEmpty {
            allHTTPHeaderFields = fields
        }
    }
}
