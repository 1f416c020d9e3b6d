import CourierConcurrency
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A group of tasks sharing a configuration, a delegate, a delegate queue and one transfer engine.
///
/// ```swift
/// let session = Session(configuration: .default, delegate: MyDelegate(), delegateQueue: nil)
/// let task = session.downloadTask(with: url)
/// task.resume()
/// ```
///
/// A session holds its delegate strongly until it is invalidated. A session released without
/// ``finishTasksAndInvalidate()`` or ``invalidateAndCancel()`` cancels its tasks (their completion handlers and
/// async callers get `.cancelled`; the delegate is not called any more) and shuts its engine down.
public final class Session: Sendable, CustomStringConvertible {
    /// A session with the ``SessionConfiguration/default`` configuration and no delegate, for the convenience
    /// methods. Never invalidated.
    public static let shared = Session(configuration: .default)

    /// A copy of the configuration the session was created with.
    public let configuration: SessionConfiguration
    /// Where delegate methods and completion handlers run. Calls are serial even if the queue is concurrent.
    public let delegateQueue: OperationQueue
    let core: SessionCore
    private let descriptionSlot = LockedValue<String?>(nil)

    /// Makes a session. With a nil `delegateQueue`, the session makes a serial queue of its own.
    public init(
        configuration: SessionConfiguration = .default,
        delegate: (any SessionDelegate)? = nil,
        delegateQueue: OperationQueue? = nil
    ) {
        self.configuration = configuration
        let queue: OperationQueue
        if let delegateQueue {
            queue = delegateQueue
        } else {
            queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            queue.name = "Courier.Session.delegateQueue"
        }
        self.delegateQueue = queue
        self.core = SessionCore(configuration: configuration, delegate: delegate, queue: queue)
        core.attach(self)
    }

    deinit {
        core.sessionReleased()
    }

    /// The delegate, until the session is invalidated.
    public var delegate: (any SessionDelegate)? {
        core.delegate
    }

    /// An app-defined description.
    public var sessionDescription: String? {
        get { descriptionSlot.withLock { $0 } }
        set { descriptionSlot.withLock { $0 = newValue } }
    }

    public var description: String {
        "Session(\(sessionDescription ?? "-"))"
    }

    // MARK: Data tasks

    /// A data task for `request`; its events go to the session delegate.
    public func dataTask(with request: URLRequest) -> DataTask {
        makeDataTask(TaskRequest(request), sink: .delegate, body: Session.streamedBody(of: request))
    }

    public func dataTask(with url: URL) -> DataTask {
        makeDataTask(TaskRequest(url: url), sink: .delegate)
    }

    /// A data task that reports to `completionHandler` (on the delegate queue) instead of the data delegate.
    public func dataTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> DataTask {
        makeDataTask(
            TaskRequest(request),
            sink: .dataHandler(completionHandler),
            body: Session.streamedBody(of: request)
        )
    }

    public func dataTask(
        with url: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> DataTask {
        makeDataTask(TaskRequest(url: url), sink: .dataHandler(completionHandler))
    }

    func makeDataTask(
        _ request: TaskRequest,
        sink: TaskSink,
        body: UploadBody? = nil,
        delegate: (any SessionTaskDelegate)? = nil
    ) -> DataTask {
        let task = DataTask(
            core: core,
            kind: .data,
            identifier: core.makeIdentifier(),
            request: request,
            sink: sink,
            uploadBody: body
        )
        return created(task, delegate: delegate)
    }

    /// The body of a request with an `httpBodyStream`: read as it is sent (chunked unless the request has a
    /// `Content-Length`), and asked of the task delegate again (`needNewBodyStream`) for an exchange that resends it.
    static func streamedBody(of request: URLRequest) -> UploadBody? {
        guard let stream = request.httpBodyStream else {
            return nil
        }
        let length = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
        return .stream(.inputStream(OneTimeBody(InputStreamReader(stream))), length: length)
    }

    /// A task just made, with its own delegate, once its delegates heard of it (`didCreateTask`).
    private func created<Task: SessionTask>(_ task: Task, delegate: (any SessionTaskDelegate)?) -> Task {
        if let delegate {
            task.delegate = delegate
        }
        task.announceCreation(to: self)
        return task
    }

    // MARK: Upload tasks

    /// An upload task that sends `bodyData` (the request's `httpBody` is ignored). Method: the request's, or POST
    /// when it says GET.
    public func uploadTask(with request: URLRequest, from bodyData: Data) -> UploadTask {
        makeUploadTask(TaskRequest(request), body: .data(bodyData), sink: .delegate)
    }

    /// An upload task whose body the task delegate streams: its
    /// ``SessionTaskDelegate/urlSession(_:task:needNewBodyStream:)`` is asked for an `InputStream` when the task
    /// starts (and again for an exchange that resends the body). The request's `httpBody` and `httpBodyStream` are
    /// ignored; its `Content-Length`, when it has one, is the body's length (else HTTP/1.1 sends it chunked). The
    /// stream is read on a thread of Courier's, at most 1 MiB ahead of what the network took. Method: the request's,
    /// or POST when it says GET. Not in background sessions (courierd sends bodies from files).
    public func uploadTask(withStreamedRequest request: URLRequest) -> UploadTask {
        let length = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
        return makeUploadTask(TaskRequest(request), body: .stream(.delegate, length: length), sink: .delegate)
    }

    /// An upload task that streams the file at `fileURL` (checked when the task starts: a missing file fails it
    /// with `.fileDoesNotExist`).
    public func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> UploadTask {
        makeUploadTask(TaskRequest(request), body: .file(fileURL), sink: .delegate)
    }

    public func uploadTask(
        with request: URLRequest,
        from bodyData: Data?,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> UploadTask {
        makeUploadTask(TaskRequest(request), body: .data(bodyData ?? Data()), sink: .dataHandler(completionHandler))
    }

    public func uploadTask(
        with request: URLRequest,
        fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> UploadTask {
        makeUploadTask(TaskRequest(request), body: .file(fileURL), sink: .dataHandler(completionHandler))
    }

    func makeUploadTask(
        _ request: TaskRequest,
        body: UploadBody,
        sink: TaskSink,
        delegate: (any SessionTaskDelegate)? = nil
    ) -> UploadTask {
        var request = request
        if request.method.uppercased() == "GET" {
            request.setMethod("POST")
        }
        request.removeBody()
        let task = UploadTask(
            core: core,
            kind: .upload,
            identifier: core.makeIdentifier(),
            request: request,
            sink: sink,
            uploadBody: body
        )
        return created(task, delegate: delegate)
    }

    // MARK: Download tasks

    /// A download task for `request`; the delegate gets the file in `didFinishDownloadingTo`.
    public func downloadTask(with request: URLRequest) -> DownloadTask {
        makeDownloadTask(TaskRequest(request), sink: .delegate)
    }

    public func downloadTask(with url: URL) -> DownloadTask {
        makeDownloadTask(TaskRequest(url: url), sink: .delegate)
    }

    /// A download task reporting to `completionHandler` (on the delegate queue). The file is deleted when the
    /// handler returns.
    public func downloadTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> DownloadTask {
        makeDownloadTask(TaskRequest(request), sink: .downloadHandler(completionHandler))
    }

    public func downloadTask(
        with url: URL,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> DownloadTask {
        makeDownloadTask(TaskRequest(url: url), sink: .downloadHandler(completionHandler))
    }

    func makeDownloadTask(
        _ request: TaskRequest,
        sink: TaskSink,
        delegate: (any SessionTaskDelegate)? = nil
    ) -> DownloadTask {
        created(
            DownloadTask(core: core, kind: .download, identifier: core.makeIdentifier(), request: request, sink: sink),
            delegate: delegate
        )
    }

    /// A download task that continues from resume data (see `docs/resume-data.md`). Invalid resume data makes a
    /// task that fails with `.cannotResume` when resumed. The request carries `Range` and `If-Range`; the
    /// delegate hears `didResumeAtOffset` (0 when the server sent the whole entity again).
    public func downloadTask(withResumeData resumeData: Data) -> DownloadTask {
        makeResumedTask(resumeData, sink: .delegate)
    }

    public func downloadTask(
        withResumeData resumeData: Data,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> DownloadTask {
        makeResumedTask(resumeData, sink: .downloadHandler(completionHandler))
    }

    func makeResumedTask(
        _ resumeData: Data,
        sink: TaskSink,
        delegate: (any SessionTaskDelegate)? = nil
    ) -> DownloadTask {
        let role = SessionTask.role(kind: .download, sink: sink, core: core)
        var machine: TaskMachine
        switch ResumeData.decode(resumeData) {
        case .success(let resume):
            let request = TaskRequest(url: URL(string: resume.url), headerFields: resume.headers)
            machine = TaskMachine(role: role, request: request)
            machine.resumeSource = resume
            if let original = resume.originalURL.flatMap(URL.init(string:)) {
                machine.originalRequest = TaskRequest(url: original)
            }
        case .failure(let error):
            machine = TaskMachine(role: role, request: nil)
            machine.resumeSourceError = error
        }
        let task = DownloadTask(
            core: core,
            kind: .download,
            identifier: core.makeIdentifier(),
            request: machine.currentRequest,
            sink: sink,
            machine: machine
        )
        return created(task, delegate: delegate)
    }

    /// Deletes the partial file that `resumeData` names (in this configuration's `resumeDataDirectory`), for
    /// resume data that will not be used. Unknown or malformed resume data is ignored.
    public func discardResumeData(_ resumeData: Data) {
        guard case .success(let resume) = ResumeData.decode(resumeData) else {
            return
        }
        try? FileManager.default.removeItem(at: configuration.resumeDataDirectory.appendingPathComponent(resume.file))
    }

    // MARK: Invalidation

    /// Accepts no new tasks; running tasks finish; then `didBecomeInvalidWithError(nil)` and the delegate is
    /// released. Tasks resumed afterwards fail with `.sessionInvalidated`. Calling it on ``shared`` does nothing.
    public func finishTasksAndInvalidate() {
        guard self !== Session.shared else {
            return
        }
        core.finishTasksAndInvalidate()
    }

    /// Cancels every task, then invalidates like ``finishTasksAndInvalidate()``.
    public func invalidateAndCancel() {
        guard self !== Session.shared else {
            return
        }
        core.invalidateAndCancel()
    }

    /// The tasks that were resumed and have not completed. A background session recreates the tasks courierd kept
    /// running for the app (after a relaunch) once its opening with courierd settled, which `Session.init` only
    /// starts: the first read waits for it as the first task factory does (a round trip on a local socket, or as long
    /// as courierd takes to start); ``getAllTasks(completionHandler:)`` waits without blocking.
    public var allTasks: [SessionTask] {
        core.waitUntilBackgroundOpened()
        return core.liveTasks.sorted { $0.taskIdentifier < $1.taskIdentifier }
    }

    /// Calls `completionHandler` once, on the delegate queue, with ``allTasks``. For a background session, after its
    /// opening with courierd settled: after a relaunch, these include the tasks courierd kept running for the app.
    public func getAllTasks(completionHandler: @escaping @Sendable ([SessionTask]) -> Void) {
        whenBackgroundOpened { [self] _ in
            let tasks = allTasks
            delegateQueue.addOperation {
                completionHandler(tasks)
            }
        }
    }

    /// Calls `completionHandler` on the delegate queue with the live data, upload and download tasks.
    public func getTasksWithCompletionHandler(
        _ completionHandler: @escaping @Sendable ([DataTask], [UploadTask], [DownloadTask]) -> Void
    ) {
        getAllTasks { tasks in
            completionHandler(
                tasks.compactMap { $0 is UploadTask ? nil : $0 as? DataTask },
                tasks.compactMap { $0 as? UploadTask },
                tasks.compactMap { $0 as? DownloadTask }
            )
        }
    }
}
