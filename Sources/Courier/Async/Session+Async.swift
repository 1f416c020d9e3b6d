public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension Session {
    /// Fetches `request` into memory. Throws ``CourierIPC/CourierError``; any HTTP status is a success. Cancelling the
    /// calling Swift task cancels the transfer.
    public func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        try await data(for: request, delegate: nil)
    }

    /// ``data(for:)-(URLRequest)`` with a delegate of the task's own.
    ///
    /// `delegate`, when not nil, is the task's own (``SessionTask/delegate``): it hears `didCreateTask` before the task
    /// starts, and the task's redirects, challenges, informational responses, upload progress and metrics (the body
    /// and the end come back here, as with every async convenience); what it leaves to its defaults goes on to the
    /// session's delegate. The same holds for `delegate` in the other async conveniences, each of which also has a form
    /// without it (so that a protocol written for URLSession's methods without `delegate:` is met by a ``Session``).
    public func data(
        for request: URLRequest,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, URLResponse) {
        try withURLResponse(await runDataTask { sink in
            self.makeDataTask(
                TaskRequest(request),
                sink: sink,
                body: Session.streamedBody(of: request),
                delegate: delegate
            )
        })
    }

    public func data(from url: URL) async throws -> (Data, URLResponse) {
        try await data(from: url, delegate: nil)
    }

    public func data(
        from url: URL,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, URLResponse) {
        try withURLResponse(await runDataTask { sink in
            self.makeDataTask(TaskRequest(url: url), sink: sink, delegate: delegate)
        })
    }

    /// Uploads `bodyData` and returns the response body.
    public func upload(for request: URLRequest, from bodyData: Data) async throws -> (Data, URLResponse) {
        try await upload(for: request, from: bodyData, delegate: nil)
    }

    public func upload(
        for request: URLRequest,
        from bodyData: Data,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, URLResponse) {
        try withURLResponse(await runUploadTask(TaskRequest(request), body: .data(bodyData), delegate: delegate))
    }

    /// Uploads the file at `fileURL` (streamed from disk) and returns the response body.
    public func upload(for request: URLRequest, fromFile fileURL: URL) async throws -> (Data, URLResponse) {
        try await upload(for: request, fromFile: fileURL, delegate: nil)
    }

    public func upload(
        for request: URLRequest,
        fromFile fileURL: URL,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, URLResponse) {
        try withURLResponse(await runUploadTask(TaskRequest(request), body: .file(fileURL), delegate: delegate))
    }

    /// Downloads `request` to a file. The returned file is the caller's: it is in the configuration's
    /// ``SessionConfiguration/temporaryDirectory`` and nothing deletes it. `delegate` also hears `didWriteData` when
    /// it is a ``SessionDownloadDelegate``.
    public func download(for request: URLRequest) async throws -> (URL, URLResponse) {
        try await download(for: request, delegate: nil)
    }

    public func download(
        for request: URLRequest,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (URL, URLResponse) {
        try withURLResponse(await runDownloadTask { sink in
            self.makeDownloadTask(TaskRequest(request), sink: sink, delegate: delegate)
        })
    }

    public func download(from url: URL) async throws -> (URL, URLResponse) {
        try await download(from: url, delegate: nil)
    }

    public func download(
        from url: URL,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (URL, URLResponse) {
        try withURLResponse(await runDownloadTask { sink in
            self.makeDownloadTask(TaskRequest(url: url), sink: sink, delegate: delegate)
        })
    }

    /// Continues a download from resume data; see ``downloadTask(withResumeData:)``.
    public func download(resumeFrom resumeData: Data) async throws -> (URL, URLResponse) {
        try await download(resumeFrom: resumeData, delegate: nil)
    }

    public func download(
        resumeFrom resumeData: Data,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (URL, URLResponse) {
        try withURLResponse(await runDownloadTask { sink in
            self.makeResumedTask(resumeData, sink: sink, delegate: delegate)
        })
    }

    /// Starts `request` and returns once the response head arrived, with the body as ``AsyncBytes``.
    /// A slow consumer pauses the transfer; memory stays bounded.
    public func bytes(for request: URLRequest) async throws -> (AsyncBytes, URLResponse) {
        try await bytes(for: request, delegate: nil)
    }

    public func bytes(
        for request: URLRequest,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (AsyncBytes, URLResponse) {
        try withURLResponse(
            await runBytesTask(TaskRequest(request), body: Session.streamedBody(of: request), delegate: delegate)
        )
    }

    public func bytes(from url: URL) async throws -> (AsyncBytes, URLResponse) {
        try await bytes(from: url, delegate: nil)
    }

    public func bytes(
        from url: URL,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (AsyncBytes, URLResponse) {
        try withURLResponse(await runBytesTask(TaskRequest(url: url), delegate: delegate))
    }

    // MARK: Plumbing (shared with the swift-http-types overloads)

    /// Sends `body` with `request` in an upload task and waits for the response body.
    func runUploadTask(
        _ request: TaskRequest,
        body: UploadBody,
        delegate: (any SessionTaskDelegate)?
    ) async throws -> (Data, TaskResponse) {
        try await runDataTask { sink in makeUploadTask(request, body: body, sink: sink, delegate: delegate) }
    }

    /// Starts the data task `make` builds and waits for its end. The response is the task's own, from which each
    /// API makes the type it returns.
    func runDataTask(_ make: (TaskSink) -> DataTask) async throws -> (Data, TaskResponse) {
        let box = ContinuationBox<(Data, TaskResponse)>()
        let task = make(
            .inlineData { data, response, error in
                if let error {
                    box.resume(throwing: error)
                } else if let response {
                    box.resume(returning: (data ?? Data(), response))
                } else {
                    box.resume(throwing: CourierError(.badServerResponse, "no response"))
                }
            }
        )
        return try await withTaskCancellationHandler {
            try await box.wait(after: {
                task.resume()
            })
        } onCancel: {
            task.cancel()
        }
    }

    func runDownloadTask(_ make: (TaskSink) -> DownloadTask) async throws -> (URL, TaskResponse) {
        let box = ContinuationBox<(URL, TaskResponse)>()
        let temporaryDirectory = configuration.temporaryDirectory
        let task = make(
            .inlineDownload { location, response, error in
                if let error {
                    box.resume(throwing: error)
                    return
                }
                guard let location, let response else {
                    box.resume(throwing: CourierError(.badServerResponse, "no response"))
                    return
                }
                // The staging file is deleted after this handler: move it to a location the caller owns, in the
                // configuration's temporary directory (the same file system as the staging file: a rename).
                let destination = temporaryDirectory
                    .appendingPathComponent("courier-download-\(UUID().uuidString).tmp")
                do {
                    try FileManager.default.moveItem(at: location, to: destination)
                    box.resume(returning: (destination, response))
                } catch {
                    box.resume(
                        throwing: CourierError(
                            .cannotMoveFile,
                            "cannot move the download: \(error)",
                            failingURL: response.url
                        )
                    )
                }
            }
        )
        return try await withTaskCancellationHandler {
            try await box.wait(after: {
                task.resume()
            })
        } onCancel: {
            task.cancel()
        }
    }

    func runBytesTask(
        _ request: TaskRequest,
        body: UploadBody? = nil,
        delegate: (any SessionTaskDelegate)? = nil
    ) async throws -> (AsyncBytes, TaskResponse) {
        let stream = ByteStream()
        let task = makeDataTask(request, sink: .stream(stream), body: body, delegate: delegate)
        stream.setDrainedHandler { [weak task] in
            task?.setBackpressure(paused: false)
        }
        let lifetime = StreamLifetime(task: task)
        let response = try await withTaskCancellationHandler {
            task.resume()
            return try await stream.response()
        } onCancel: {
            task.cancel()
        }
        return (AsyncBytes(task: task, stream: stream, lifetime: lifetime), response)
    }
}

/// The body and the task's response as the `URLResponse` the URLSession-shaped API returns (an
/// `HTTPURLResponse`, built here).
private func withURLResponse<Body>(_ result: (Body, TaskResponse)) throws -> (Body, URLResponse) {
    guard let response = result.1.httpResponse else {
        throw CourierError(.badServerResponse, "the response cannot be represented as an HTTPURLResponse")
    }
    return (result.0, response)
}
