import Foundation

#if canImport(FoundationNetworking)
package import FoundationNetworking
#endif

/// A `URLRequest` that can be encoded: what a task machine's inputs and actions carry.
///
/// Encodes what a transfer is made of (URL, method, header fields, body, timeout); a decoded request has the
/// defaults of `URLRequest` for everything else (cache policy, cellular access), which Courier does not use.
package struct CodableRequest: Codable, Sendable, Equatable {
    package var request: URLRequest

    package init(_ request: URLRequest) {
        self.request = request
    }

    private enum CodingKeys: String, CodingKey {
        case url, method, headers, body, timeout
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let url = try container.decode(URL.self, forKey: .url)
        var request = URLRequest(url: url)
        request.httpMethod = try container.decodeIfPresent(String.self, forKey: .method)
        request.allHTTPHeaderFields = try container.decodeIfPresent([String: String].self, forKey: .headers)
        request.httpBody = try container.decodeIfPresent(Data.self, forKey: .body)
        if let timeout = try container.decodeIfPresent(TimeInterval.self, forKey: .timeout) {
            request.timeoutInterval = timeout
        }
        self.request = request
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        guard let url = request.url else {
            throw EncodingError.invalidValue(
                request,
                EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "a request without a URL")
            )
        }
        try container.encode(url, forKey: .url)
        try container.encodeIfPresent(request.httpMethod, forKey: .method)
        try container.encodeIfPresent(request.allHTTPHeaderFields, forKey: .headers)
        try container.encodeIfPresent(request.httpBody, forKey: .body)
        try container.encode(request.timeoutInterval, forKey: .timeout)
    }
}
