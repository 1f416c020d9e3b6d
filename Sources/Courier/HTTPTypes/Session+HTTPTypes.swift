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
/// the transfer. A request without a scheme or authority throws ``CourierError/Code/badURL``. `delegate` is the task's
/// own, as in the URLSession-shaped conveniences (``Session/data(for:delegate:)-(URLRequest,_)``).
extension Session {
    /// Fetches `request` into memory. Any HTTP status is a success.
    public func data(
        for request: HTTPRequest,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (Data, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runDataTask { sink in makeDataTask(taskRequest, sink: sink, delegate: delegate) })
    }

    /// Uploads `bodyData` (borrowed by the engine, not copied, from 16 KiB) and returns the response body.
    public func upload(
        for request: HTTPRequest,
        from bodyData: Data,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (Data, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runDataTask { sink in
                makeUploadTask(taskRequest, body: .data(bodyData), sink: sink, delegate: delegate)
            })
    }

    /// Uploads the file at `fileURL` (streamed from disk) and returns the response body.
    public func upload(
        for request: HTTPRequest,
        fromFile fileURL: URL,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (Data, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runDataTask { sink in
                makeUploadTask(taskRequest, body: .file(fileURL), sink: sink, delegate: delegate)
            })
    }

    /// Downloads `request` to a file. The returned file is the caller's: it is in the configuration's
    /// ``SessionConfiguration/temporaryDirectory`` and nothing deletes it.
    public func download(
        for request: HTTPRequest,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (URL, HTTPResponse) {
        let taskRequest = try TaskRequest(courierHTTPRequest: request)
        return try withHTTPResponse(
            await runDownloadTask { sink in makeDownloadTask(taskRequest, sink: sink, delegate: delegate) })
    }

    /// Starts `request` and returns once the response head arrived, with the body as ``AsyncBytes``.
    /// A slow consumer pauses the transfer; memory stays bounded.
    public func bytes(
        for request: HTTPRequest,
        delegate: (any SessionTaskDelegate)? = nil
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
