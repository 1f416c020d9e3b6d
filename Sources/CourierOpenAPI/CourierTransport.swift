public import Courier
public import Foundation
public import HTTPTypes
public import OpenAPIRuntime

/// A swift-openapi-runtime `ClientTransport` on a Courier ``Session``, so that a client swift-openapi-generator made
/// runs on Courier: `Client(serverURL: url, transport: CourierTransport())`.
///
/// Each operation is one task of the session, on Courier's swift-http-types path: redirects, cookies,
/// authentication challenges, proxies, the URL cache, bandwidth limits, metrics and spans all apply as to any task. A
/// request body is collected before it is sent (an upload task); the response body streams as it arrives, and
/// cancelling the calling Swift task cancels the transfer. Failures throw ``CourierError``.
public struct CourierTransport: ClientTransport {
    /// The session the operations run in.
    public let session: Session

    /// A transport on `session` (by default a session of its own, with the default configuration).
    public init(session: Session = Session(configuration: .default)) {
        self.session = session
    }

    public func send(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let absolute = try Self.resolve(request, against: baseURL)
        if let body {
            let bytes = try await [UInt8](collecting: body, upTo: .max)
            let (data, response) = try await session.upload(for: absolute, from: Data(bytes))
            return (response, HTTPBody(data))
        }
        let (bytes, response) = try await session.bytes(for: absolute)
        let length: HTTPBody.Length =
            if response.headerFields[.contentEncoding] == nil,
                let value = response.headerFields[.contentLength], let count = Int64(value)
            {
                .known(count)
            } else {
                .unknown
            }
        return (response, HTTPBody(ResponseChunks(bytes: bytes), length: length, iterationBehavior: .single))
    }

    /// `request` (whose path is the operation's, with its query) on `baseURL`'s scheme, authority and path.
    package static func resolve(_ request: HTTPRequest, against baseURL: URL) throws -> HTTPRequest {
        guard let components = URLComponents(url: baseURL, resolvingAgainstBaseURL: true), let scheme = components.scheme,
            let host = components.percentEncodedHost, !host.isEmpty
        else {
            throw CourierError(.badURL, "the server URL \(baseURL) has no scheme or host", failingURL: baseURL)
        }
        var resolved = request
        resolved.scheme = scheme
        resolved.authority = components.port.map { "\(host):\($0)" } ?? host
        var basePath = components.percentEncodedPath
        if basePath.hasSuffix("/") {
            basePath.removeLast()
        }
        resolved.path = basePath + (request.path ?? "/")
        return resolved
    }
}

/// A response body's chunks, as `HTTPBody` reads them.
private struct ResponseChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let bytes: AsyncBytes

    struct AsyncIterator: AsyncIteratorProtocol {
        var bytes: AsyncBytes.AsyncIterator

        mutating func next() async throws -> ArraySlice<UInt8>? {
            try await bytes.nextChunk().map { ArraySlice($0) }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(bytes: bytes.makeAsyncIterator())
    }
}
