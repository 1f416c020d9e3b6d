public import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The async API on apple/swift-http-types, in the shape of its `HTTPTypesFoundation` extensions of `URLSession`
/// (and of swift-openapi's transports), so that code written for them ports by changing the session.
///
/// The fast path: the response is made from the head Courier parsed, and no `HTTPURLResponse` is ever built for
/// these calls (FoundationNetworking's initialiser costs more than the rest of receiving a small response).
/// Everything else is the URLSession-shaped API's: the same tasks, redirects, cookies, authentication, delegates
/// (with their `URLResponse` signatures) and errors (``CourierError``). Cancelling the calling Swift task cancels
/// the transfer. A request without a scheme or authority throws ``CourierError/Code/badURL``. Each call has a form with
/// `delegate:`, the task's own, as in the URLSession-shaped conveniences
/// (``Session/data(for:delegate:)-(URLRequest,_)``).
extension Session {
    /// Fetches `request` into memory. Any HTTP status is a success.
    public func data(for request: HTTPRequest) async throws -> (Data, HTTPResponse) {
        try await data(for: request, delegate: nil)
    }

    public func data(
        for request: HTTPRequest,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runDataTask { sink in makeDataTask(taskRequest, sink: sink, delegate: delegate) })
    }

    /// Uploads `bodyData` (borrowed by the engine, not copied, from 16 KiB) and returns the response body.
    public func upload(for request: HTTPRequest, from bodyData: Data) async throws -> (Data, HTTPResponse) {
        try await upload(for: request, from: bodyData, delegate: nil)
    }

    public func upload(
        for request: HTTPRequest,
        from bodyData: Data,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(await runUploadTask(taskRequest, body: .data(bodyData), delegate: delegate))
    }

    /// Uploads the file at `fileURL` (streamed from disk) and returns the response body.
    public func upload(for request: HTTPRequest, fromFile fileURL: URL) async throws -> (Data, HTTPResponse) {
        try await upload(for: request, fromFile: fileURL, delegate: nil)
    }

    public func upload(
        for request: HTTPRequest,
        fromFile fileURL: URL,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(await runUploadTask(taskRequest, body: .file(fileURL), delegate: delegate))
    }

    /// Uploads a body read from `body` as it is sent (an async sequence of byte chunks: `Data`, `[UInt8]`,
    /// `ArraySlice<UInt8>`…) and returns the response body. The sequence is read at most 1 MiB ahead of what the
    /// network took, so a body of any length is sent with bounded memory, and it is read once: a redirect or an
    /// authentication retry that would send it again fails with `CourierError.Code.requestBodyStreamExhausted`.
    /// `length`, when known, is sent as the `Content-Length` and checked against what the sequence gives; else
    /// HTTP/1.1 sends the body chunked. A sequence that throws fails the task with the same code. Method: the
    /// request's, or POST when it says GET.
    public func upload<Body: AsyncSequence & Sendable>(
        for request: HTTPRequest,
        body: Body,
        length: Int64? = nil,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (Data, HTTPResponse) where Body.Element: DataProtocol {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runUploadTask(taskRequest, body: .sequence(body, length: length), delegate: delegate)
        )
    }

    /// ``bytes(for:delegate:)-(HTTPRequest,_)`` with a request body streamed from `body`, as in
    /// ``upload(for:body:length:delegate:)``: both directions stream. The request's method must carry a body (not GET
    /// or HEAD).
    public func bytes<Body: AsyncSequence & Sendable>(
        for request: HTTPRequest,
        body: Body,
        length: Int64? = nil,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (AsyncBytes, HTTPResponse) where Body.Element: DataProtocol {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runBytesTask(taskRequest, body: .sequence(body, length: length), delegate: delegate)
        )
    }

    /// Downloads `request` to a file. The returned file is the caller's: it is in the configuration's
    /// ``SessionConfiguration/temporaryDirectory`` and nothing deletes it.
    public func download(for request: HTTPRequest) async throws -> (URL, HTTPResponse) {
        try await download(for: request, delegate: nil)
    }

    public func download(
        for request: HTTPRequest,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (URL, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runDownloadTask { sink in makeDownloadTask(taskRequest, sink: sink, delegate: delegate) })
    }

    /// Starts `request` and returns once the response head arrived, with the body as ``AsyncBytes``.
    /// A slow consumer pauses the transfer; memory stays bounded.
    public func bytes(for request: HTTPRequest) async throws -> (AsyncBytes, HTTPResponse) {
        try await bytes(for: request, delegate: nil)
    }

    public func bytes(
        for request: HTTPRequest,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (AsyncBytes, HTTPResponse) {
        try withHTTPResponse(await runBytesTask(TaskRequest(courierHTTPRequest: request), delegate: delegate))
    }
}

extension SessionTask {
    /// The final response as swift-http-types' `HTTPResponse`, once it arrived (no `HTTPURLResponse` is made).
    public var httpResponse: HTTPResponse? {
        storage.withLock { $0.finalResponse }?.head.httpResponse
    }
}

/// The body and the task's response as an `HTTPResponse`.
private func withHTTPResponse<Body>(_ result: (Body, TaskResponse)) throws -> (Body, HTTPResponse) {
    guard let response = result.1.head.httpResponse else {
        throw CourierError(.badServerResponse, "status \(result.1.head.status) is not an HTTP status")
    }
    return (result.0, response)
}
