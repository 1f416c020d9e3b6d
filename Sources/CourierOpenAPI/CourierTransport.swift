public import Courier
public import Foundation
public import HTTPTypes
public import OpenAPIRuntime

/// A swift-openapi-runtime `ClientTransport` on a Courier ``Session``, so that a client swift-openapi-generator made
/// runs on Courier: `Client(serverURL: url, transport: CourierTransport())`.
///
/// Each operation is one task of the session, on Courier's swift-http-types path: redirects, cookies,
/// authentication challenges, proxies, the URL cache, bandwidth limits, metrics and spans all apply as to any task. A
/// request body streams as it is sent (at most 1 MiB of it read ahead of the network; with its `Content-Length` when
/// `HTTPBody` knows it, else chunked on HTTP/1.1), and so does the response body as it arrives; cancelling the
/// calling Swift task cancels the transfer. A request body is read once: a redirect that would resend it (307, 308)
/// fails. Failures throw ``CourierError``.
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
        let (bytes, response): (AsyncBytes, HTTPResponse)
        if let body {
            let length: Int64? =
                switch body.length {
                case .known(let count): count
                case .unknown: nil
                }
            (bytes, response) = try await session.bytes(for: absolute, body: body, length: length)
        } else {
            (bytes, response) = try await session.bytes(for: absolute)
        }
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
