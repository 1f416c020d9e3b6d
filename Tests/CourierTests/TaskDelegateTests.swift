import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The iOS 15–17 task surface: a task's own delegate (asked first, its defaults passing calls on to the session's),
/// `didCreateTask`, informational responses, `task.progress` and `prefersIncrementalDelivery`.
@Suite("Task delegates and progress")
struct TaskDelegateTests {
    /// A task's own delegate that implements the task calls only, and records them.
    final class TaskCallsDelegate: SessionTaskDelegate, Sendable {
        let log = EventLog<String>()
        /// The state of each task when `didCreateTask` came, and the thread it came on.
        let created = LockedValue<[(SessionTask.State, pthread_t)]>([])
        let credential: URLCredential?

        init(credential: URLCredential? = nil) {
            self.credential = credential
        }

        func urlSession(_ session: Session, didCreateTask task: SessionTask) {
            created.withLock { $0.append((task.state, pthread_self())) }
            log.append("created")
        }

        func urlSession(
            _ session: Session,
            task: SessionTask,
            willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest,
            completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            log.append("redirect \(response.statusCode)")
            completionHandler(request)
        }

        func urlSession(
            _ session: Session,
            task: SessionTask,
            didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (Session.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            let method = challenge.protectionSpace.authenticationMethod
            guard method != URLAuthenticationMethodServerTrust else {
                completionHandler(.performDefaultHandling, nil)
                return
            }
            log.append("challenge")
            completionHandler(.useCredential, credential)
        }

        func urlSession(
            _ session: Session,
            task: SessionTask,
            didReceiveInformationalResponse response: HTTPURLResponse
        ) {
            log.append("informational \(response.statusCode) \(response.value(forHTTPHeaderField: "Link") ?? "-")")
        }

        func urlSession(_ session: Session, task: SessionTask, didFinishCollecting metrics: SessionTaskMetrics) {
            log.append("metrics \(metrics.transactionMetrics.count)")
        }
    }

    /// A task's own data delegate that takes the body and leaves everything else to the session's delegate.
    final class BodyOnlyDelegate: SessionDataDelegate, Sendable {
        let chunks = LockedValue<[Data]>([])

        func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
            chunks.withLock { $0.append(data) }
        }
    }

    @Test("an async convenience's delegate hears didCreateTask before the start, then the task's calls")
    func asyncConvenienceDelegate() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let delegate = TaskCallsDelegate()
            let request = URLRequest(url: server.url("/redirect/1?early-hints=%3C/style.css%3E"))
            let (data, response) = try await session.data(for: request, delegate: delegate)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(data == TestServer.bytes(count: 16))
            let states = delegate.created.withLock { $0.map(\.0) }
            #expect(states == [.suspended])
            try await delegate.log.wait { $0.contains { $0.hasPrefix("metrics") } }
            // The first hop's early hints come before its redirect (the redirect's target has none).
            #expect(
                delegate.log.events == [
                    "created", "informational 102 -", "informational 103 </style.css>", "redirect 302", "metrics 2",
                ]
            )
        }
    }

    @Test("informational responses reach the task's delegate in order, before the final response")
    func informationalResponses() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let delegate = TaskCallsDelegate()
            let url = server.url("/bytes/64?early-hints=%3C/style.css%3E;%20rel=preload")
            let (data, _) = try await session.data(from: url, delegate: delegate)
            #expect(data.count == 64)
            try await delegate.log.wait { $0.contains { $0.hasPrefix("metrics") } }
            #expect(
                delegate.log.events == [
                    "created",
                    "informational 102 -",
                    "informational 103 </style.css>; rel=preload",
                    "metrics 1",
                ]
            )
        }
    }

    @Test("a task's own delegate answers the challenge of a session without a delegate")
    func ownDelegateAnswersChallenge() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let delegate = TaskCallsDelegate(
                credential: URLCredential(user: "ann", password: "secret", persistence: .none)
            )
            let (data, response) = try await session.data(
                from: server.url("/basic-auth/ann/secret"),
                delegate: delegate
            )
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(jsonObject(data)["user"] as? String == "ann")
            #expect(delegate.log.events.contains("challenge"))
        }
    }

    @Test("what a task's own delegate leaves to its defaults goes on to the session's delegate")
    func ownDelegateFirstThenSession() async throws {
        try await withServer { server in
            let (session, sessionDelegate) = makeRecordingSession()
            defer { session.finishTasksAndInvalidate() }
            let own = BodyOnlyDelegate()
            let task = session.dataTask(with: server.url("/bytes/200000"))
            task.delegate = own
            #expect(task.delegate === own)
            task.resume()
            let error = try await sessionDelegate.completion(of: task)
            #expect(error == nil)
            // The body went to the task's delegate only; the response's disposition, the metrics and the end to the
            // session's, through the defaults of the task's delegate.
            #expect(own.chunks.withLock { $0.reduce(Data(), +) } == TestServer.bytes(count: 200_000))
            #expect(sessionDelegate.body(of: task).isEmpty)
            let events = sessionDelegate.events(of: task).map { "\($0)" }
            #expect(events.first == "response(\(task.taskIdentifier), 200)")
            #expect(sessionDelegate.metrics(of: task).count == 1)
            // Released once its last call ran.
            #expect(task.delegate == nil)
        }
    }

    @Test("the session's delegate hears didCreateTask synchronously, inside the factory")
    func sessionDelegateHearsCreation() async throws {
        try await withServer { server in
            let delegate = TaskCallsDelegate()
            let session = Session(configuration: testConfiguration(), delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            // Made on a thread of its own, outside the async context.
            let (task, maker) = await made { session.downloadTask(with: server.url("/bytes/16")) }
            let created = delegate.created.withLock { $0 }
            #expect(created.count == 1)
            #expect(created.first.map { pthread_equal($0.1, maker) != 0 } == true)
            task.cancel()
        }
    }

    @Test("task.progress follows the bytes, completes at the end, and rolls up into a parent")
    func progressFollowsTheTask() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let parent = Progress(totalUnitCount: 2)
            let done = EventLog<Int>()
            var tasks: [SessionTask] = []
            for (index, size) in [300_000, 1 << 20].enumerated() {
                let task = session.downloadTask(with: server.url("/bytes/\(size)")) { _, _, error in
                    #expect(error == nil)
                    done.append(index)
                }
                parent.addChild(task.progress, withPendingUnitCount: 1)
                #expect(task.progress.isIndeterminate)
                tasks.append(task)
            }
            tasks.forEach { $0.resume() }
            try await done.wait { $0.count == 2 }
            #expect(tasks[0].progress.totalUnitCount == 300_000)
            #expect(tasks[0].progress.completedUnitCount == 300_000)
            #expect(tasks[1].progress.completedUnitCount == 1 << 20)
            #expect(tasks.allSatisfy { $0.progress.fractionCompleted == 1 })
            #expect(parent.fractionCompleted == 1)
        }
    }

    @Test("cancelling a task's progress cancels the task")
    func cancellingProgressCancelsTask() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.finishTasksAndInvalidate() }
            let ended = EventLog<CourierError.Code?>()
            let task = session.dataTask(with: server.url("/bytes/1000000?trickle=1000&interval=50")) { _, _, error in
                ended.append(CourierError.Code.of(error))
            }
            let progress = task.progress
            task.resume()
            // Some bytes first, so that the count moved before the cancel.
            while progress.completedUnitCount == 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(progress.totalUnitCount == 1_000_000)
            progress.cancel()
            let codes = try await ended.wait { !$0.isEmpty }
            #expect(codes == [.cancelled])
            #expect(task.state == .completed)
            #expect(progress.fractionCompleted < 1)
        }
    }

    @Test("prefersIncrementalDelivery false: the body in one didReceive, after all of it arrived")
    func wholeBodyDelivery() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.finishTasksAndInvalidate() }
            let task = session.dataTask(with: server.url("/bytes/300000"))
            #expect(task.prefersIncrementalDelivery)
            task.prefersIncrementalDelivery = false
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            let chunks = delegate.events(of: task).compactMap { event -> Data? in
                if case .data(_, let bytes) = event { return bytes }
                return nil
            }
            #expect(chunks.count == 1)
            #expect(chunks.first == TestServer.bytes(count: 300_000))
        }
    }
}

/// Runs `make` on a new thread and returns what it made with that thread.
private func made<Made: Sendable>(_ make: @escaping @Sendable () -> Made) async -> (Made, pthread_t) {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: (make(), pthread_self())) }.start()
    }
}
