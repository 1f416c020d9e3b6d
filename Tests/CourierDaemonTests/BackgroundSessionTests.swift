import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `SessionConfiguration.background(withIdentifier:)` end to end: the app's `Session` in this process, courierd as a
/// real process (started on demand by the session), the test server on loopback.
@Suite("background sessions", .blockingWaits, .serialized)
struct BackgroundSessionTests {
    /// What a download delegate heard, in order.
    final class Recorder: SessionDownloadDelegate, @unchecked Sendable {
        // @unchecked Sendable: every field is read and written under `lock`.
        private let lock = NSLock()
        private var _calls: [String] = []
        private var _files: [Int: Data] = [:]
        private var _errors: [Int: CourierError?] = [:]
        private var _responses: [Int: Int] = [:]
        private var _descriptions: [Int: String] = [:]
        private var _metrics: [Int: SessionTaskMetrics] = [:]
        /// The permission bits of each handed-over file and of the directory it was in, as `didFinishDownloadingTo`
        /// found them.
        private var _modes: [Int: (file: mode_t, directory: mode_t)] = [:]
        private let finished = DispatchSemaphore(value: 0)
        private let replayed = DispatchSemaphore(value: 0)
        private let invalidated = DispatchSemaphore(value: 0)
        /// How `willBeginDelayedRequest` is answered (the new request with `.useNewRequest`), and when it was asked.
        private var _delayedAnswer: (Session.DelayedRequestDisposition, URLRequest?) = (.continueLoading, nil)
        private var _delayedAskedAt: [Int: Date] = [:]
        var delayedAskedAt: [Int: Date] { lock.withLock { _delayedAskedAt } }

        func answerDelayedStart(_ disposition: Session.DelayedRequestDisposition, _ request: URLRequest? = nil) {
            lock.withLock { _delayedAnswer = (disposition, request) }
        }

        func urlSession(
            _ session: Session,
            task: SessionTask,
            willBeginDelayedRequest request: URLRequest,
            completionHandler: @escaping @Sendable (Session.DelayedRequestDisposition, URLRequest?) -> Void
        ) {
            let answer = lock.withLock {
                _calls.append("willBeginDelayedRequest \(task.taskIdentifier) \(request.url?.path ?? "")")
                _delayedAskedAt[task.taskIdentifier] = Date()
                return _delayedAnswer
            }
            completionHandler(answer.0, answer.1)
        }

        var calls: [String] { lock.withLock { _calls } }
        var files: [Int: Data] { lock.withLock { _files } }
        var errors: [Int: CourierError?] { lock.withLock { _errors } }
        var statuses: [Int: Int] { lock.withLock { _responses } }
        var descriptions: [Int: String] { lock.withLock { _descriptions } }
        var metrics: [Int: SessionTaskMetrics] { lock.withLock { _metrics } }
        var modes: [Int: (file: mode_t, directory: mode_t)] { lock.withLock { _modes } }

        func urlSession(_ session: Session, task: SessionTask, didFinishCollecting metrics: SessionTaskMetrics) {
            lock.withLock { _metrics[task.taskIdentifier] = metrics }
        }

        func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
            let data = FileManager.default.contents(atPath: location.path)
            let status = (downloadTask.response as? HTTPURLResponse)?.statusCode
            var file = stat()
            var directory = stat()
            if stat(location.path, &file) == 0, stat(location.deletingLastPathComponent().path, &directory) == 0 {
                lock.withLock { _modes[downloadTask.taskIdentifier] = (file.st_mode & 0o7777, directory.st_mode & 0o7777) }
            }
            lock.withLock {
                _calls.append("finished \(downloadTask.taskIdentifier)")
                _files[downloadTask.taskIdentifier] = data
                _responses[downloadTask.taskIdentifier] = status
                _descriptions[downloadTask.taskIdentifier] = downloadTask.taskDescription
            }
        }

        func urlSession(
            _ session: Session,
            downloadTask: DownloadTask,
            didWriteData bytesWritten: Int64,
            totalBytesWritten: Int64,
            totalBytesExpectedToWrite: Int64
        ) {
            lock.withLock {
                if _calls.last != "wrote \(downloadTask.taskIdentifier)" {
                    _calls.append("wrote \(downloadTask.taskIdentifier)")
                }
            }
        }

        func urlSession(
            _ session: Session,
            downloadTask: DownloadTask,
            didResumeAtOffset fileOffset: Int64,
            expectedTotalBytes: Int64
        ) {
            lock.withLock {
                _calls.append("resumed \(downloadTask.taskIdentifier) at \(fileOffset) of \(expectedTotalBytes)")
            }
        }

        func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
            lock.withLock {
                _calls.append("completed \(task.taskIdentifier)")
                _errors[task.taskIdentifier] = error as? CourierError
            }
            finished.signal()
        }

        func urlSession(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
            lock.withLock { _calls.append("invalidated") }
            invalidated.signal()
        }

        func waitForInvalidation(timeout: TimeInterval = 30) -> Bool {
            invalidated.wait(timeout: .now() + timeout) == .success
        }

        func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
            lock.withLock { _calls.append("didFinishEvents") }
            replayed.signal()
        }

        func waitForCompletions(_ count: Int, timeout: TimeInterval = 30) -> Bool {
            (0..<count).allSatisfy { _ in finished.wait(timeout: .now() + timeout) == .success }
        }

        func waitForReplay(timeout: TimeInterval = 30) -> Bool {
            replayed.wait(timeout: .now() + timeout) == .success
        }
    }

    /// Private daemon directories; the courierd a session starts there is stopped by `cleanup()`.
    struct Place {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bg-\(UUID().uuidString)")
        var paths: DaemonPaths {
            DaemonPaths(runtimeDirectory: root.appendingPathComponent("run"), stateDirectory: root.appendingPathComponent("state"))
        }

        /// Never relaunched: the app is this test process, and a relaunch would run the whole suite again beside it.
        func configuration(_ identifier: String) -> SessionConfiguration {
            var configuration = SessionConfiguration.background(withIdentifier: identifier)
            configuration.daemonPaths = paths
            configuration.sessionSendsLaunchEvents = false
            return configuration
        }

        /// SIGTERM to the courierd serving these directories (its command line names them), then the directories go.
        /// The state directory goes first: a session still alive then reconnects, but starts no courierd without it.
        /// Again while one is found afterwards: a session reconnecting may have started one just before the state
        /// directory went (it makes the directory again).
        func cleanup() {
            let pattern = "courierd.*\(root.path)"
            let environment = ProcessInfo.processInfo.environment
            for _ in 0..<3 {
                try? FileManager.default.removeItem(at: paths.stateDirectory)
                _ = try? ChildProcess.run(
                    "/usr/bin/pkill",
                    arguments: ["-TERM", "-f", pattern],
                    environment: environment,
                    timeout: .seconds(10)
                )
                let deadline = Date().addingTimeInterval(10)
                while FileManager.default.fileExists(atPath: paths.socket.path), Date() < deadline {
                    usleep(20_000)
                }
                usleep(200_000)
                let found = try? ChildProcess.run(
                    "/usr/bin/pgrep",
                    arguments: ["-f", pattern],
                    environment: environment,
                    timeout: .seconds(10)
                )
                guard found?.termination == .exited(0) else {
                    break
                }
            }
            try? FileManager.default.removeItem(at: root)
        }
    }

    @Test("the issue's example: a background download started on demand, its events delivered to the delegate")
    func example() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let recorder = Recorder()
        let session = Session(configuration: place.configuration("com.example.podcasts"), delegate: recorder)
        let task = session.downloadTask(with: server.url("/bytes/2000000?seed=42"))
        task.taskDescription = "episode-42"
        task.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 2_000_000, seed: 42))
        #expect(recorder.statuses[task.taskIdentifier] == 200)
        #expect(recorder.calls.suffix(2) == ["finished \(task.taskIdentifier)", "completed \(task.taskIdentifier)"])
        #expect(FileManager.default.fileExists(atPath: place.paths.socket.path), "the session did not start courierd")
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("30 downloads of 1 MiB over HTTPS with HTTP/2, in waves through courierd, which trusts the session's CA")
    func http2Waves() async throws {
        let server = try await TestServer.start(.init(tls: true))
        let place = Place()
        defer { place.cleanup() }
        let recorder = Recorder()
        var configuration = place.configuration("com.example.h2")
        configuration.trustedCertificateAuthorities = .pem(server.certificateAuthority!.pem)
        configuration.httpMaximumConnectionsPerHost = 2
        let session = Session(configuration: configuration, delegate: recorder)
        let length = 1 << 20
        let tasks = (0..<30).map { index in
            session.downloadTask(with: server.url("/bytes/\(length)?seed=\(index % 5)"))
        }
        for task in tasks {
            task.resume()
        }
        #expect(recorder.waitForCompletions(tasks.count, timeout: 60))
        for (index, task) in tasks.enumerated() {
            #expect(recorder.errors[task.taskIdentifier] == .some(nil), "task \(index)")
            #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: length, seed: index % 5))
        }
        #expect(server.requests.count == tasks.count && server.requests.allSatisfy { $0.httpVersion == "2" })
        // courierd runs a session's transfers on one engine loop: one connection, its streams in waves.
        #expect(server.connectionCount <= 2)
        #expect(server.streamResetCount == 0)
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("courierd checks a download's checksum before the app hears of it: the expected one, the announced one")
    func checksums() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let recorder = Recorder()
        let session = Session(configuration: place.configuration("com.example.checksums"), delegate: recorder)
        let body = TestServer.bytes(count: 1_500_000, seed: 43)
        let right = session.downloadTask(with: server.url("/bytes/1500000?seed=43"))
        right.expectedChecksum = Checksum("sha-512=" + TestServer.sha512Hex(body))
        let wrong = session.downloadTask(with: server.url("/bytes/1500000?seed=43&etag=w"))
        wrong.expectedChecksum = Checksum("sha-256=" + TestServer.sha256Hex(Data()))
        let announced = session.downloadTask(
            with: server.url("/bytes/1500000?seed=43&etag=a&announce=repr-digest:sha-256&wrongDigest=1")
        )
        for task in [right, wrong, announced] {
            task.resume()
        }
        #expect(recorder.waitForCompletions(3))
        #expect(recorder.errors[right.taskIdentifier] == .some(nil))
        #expect(recorder.files[right.taskIdentifier] == body)
        for task in [wrong, announced] {
            #expect(recorder.errors[task.taskIdentifier]??.code == .checksumMismatch)
            #expect(recorder.files[task.taskIdentifier] == nil)
        }
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("an app the user starts hears the events it missed, and no urlSessionDidFinishEvents (a background launch's)")
    func replayToAppStartedByHand() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        // An earlier instance created the task and went away; it ends with nobody to hear it.
        var (client, _) = try Client.opening(BackgroundTransferTests.session, on: daemon)
        try BackgroundTransferTests.create(
            BackgroundTransferTests.download(1, server.url("/bytes/3000?seed=5")),
            on: &client
        )
        client.close()
        var configuration = SessionConfiguration.background(withIdentifier: BackgroundTransferTests.identifier)
        configuration.daemonPaths = daemon.paths
        configuration.sessionSendsLaunchEvents = false
        var watcher = try Client.looking(at: daemon.socket)
        _ = try watcher.tasks(of: BackgroundTransferTests.identifier) {
            $0.first?.state == SessionTask.State.completed.rawValue
        }
        watcher.close()

        // Started by hand (in the foreground, as this process is): the replay comes, the batch's end is not announced.
        let recorder = Recorder()
        let session = Session(configuration: configuration, delegate: recorder)
        #expect(recorder.waitForCompletions(1))
        usleep(300_000)
        #expect(recorder.calls.contains("completed 1"), "\(recorder.calls)")
        #expect(!recorder.calls.contains("didFinishEvents"), "\(recorder.calls)")
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test(
        "earliestBeginDate: courierd holds the task until then, asks willBeginDelayedRequest, and begins with the new request",
        arguments: [false, true]
    )
    func delayedStart(cancelling: Bool) async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let recorder = Recorder()
        let replacement = server.url("/bytes/3000?seed=9")
        recorder.answerDelayedStart(cancelling ? .cancel : .useNewRequest, URLRequest(url: replacement))
        let session = Session(configuration: place.configuration("com.example.delayed"), delegate: recorder)
        let task = session.downloadTask(with: server.url("/bytes/5000?seed=4"))
        let begin = Date().addingTimeInterval(1.5)
        task.earliestBeginDate = begin
        task.countOfBytesClientExpectsToReceive = 5000
        #expect(task.countOfBytesClientExpectsToSend == SessionTask.transferSizeUnknown)
        task.resume()
        // courierd holds it, and lists what the app declared.
        var watcher = try Client.looking(at: place.paths.socket.path)
        let waiting = try watcher.tasks(of: "com.example.delayed") { $0.first?.waitingReason != nil }
        watcher.close()
        #expect(waiting.first?.waitingReason?.hasPrefix("scheduled: begins no earlier than") == true)
        #expect(waiting.first?.task?.earliestBeginDate == begin)
        #expect(waiting.first?.task?.spec.task?.countOfBytesClientExpectsToReceive == 5000)
        #expect(recorder.waitForCompletions(1))
        let asked = try #require(recorder.delayedAskedAt[task.taskIdentifier], "\(recorder.calls)")
        #expect(asked >= begin, "asked \(asked.timeIntervalSince(begin)) s before the begin date")
        #expect(recorder.calls.first == "willBeginDelayedRequest \(task.taskIdentifier) /bytes/5000")
        // Nothing reached the server before the begin date, and the original request never did.
        #expect(!server.requests.contains { $0.uri.hasPrefix("/bytes/5000") }, "\(server.requests.map(\.uri))")
        if cancelling {
            #expect(recorder.errors[task.taskIdentifier]??.code == .cancelled)
            #expect(!server.requests.contains { $0.uri.hasPrefix("/bytes/3000") })
        } else {
            #expect(recorder.errors[task.taskIdentifier] == .some(nil))
            #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 3000, seed: 9))
            #expect(task.currentRequest?.url == replacement)
        }
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("redirects followed by courierd: the task's current request and response name where they led")
    func redirected() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let recorder = Recorder()
        let session = Session(configuration: place.configuration("com.example.redirects"), delegate: recorder)
        let start = server.url("/redirect/2?to=/bytes/5000%3Fseed%3D3")
        let task = session.downloadTask(with: start)
        task.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 5000, seed: 3))
        #expect(task.originalRequest?.url == start)
        #expect(task.currentRequest?.url?.path == "/bytes/5000")
        #expect(task.response?.url?.path == "/bytes/5000")
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("relaunch: the app goes away mid-download; a new session with the same identifier gets the task and its events")
    func relaunch() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let count = 1_500_000
        let url = server.url("/bytes/\(count)?seed=7&trickle=100000&interval=50")
        do {
            // The first run of the app: starts the download, then its connection is gone (as when it is killed).
            let first = Session(configuration: place.configuration("com.example.relaunch"), delegate: Recorder())
            let task = first.downloadTask(with: url)
            task.taskDescription = "episode-7"
            task.resume()
            first.abandonBackgroundConnection()
        }
        let recorder = Recorder()
        let second = Session(configuration: place.configuration("com.example.relaunch"), delegate: recorder)
        let tasks = second.allTasks
        #expect(tasks.map(\.taskIdentifier) == [1])
        #expect(tasks.first?.taskDescription == "episode-7")
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[1] == .some(nil))
        #expect(recorder.files[1] == TestServer.bytes(count: count, seed: 7))
        #expect(recorder.descriptions[1] == "episode-7")
        // A task made now does not reuse the daemon's identifier.
        #expect(second.downloadTask(with: url).taskIdentifier == 2)
        second.invalidateAndCancel()
        try await server.shutdown()
    }

    /// Keeps the bodies data tasks receive, and their ends; waits for them without holding a thread of Swift's
    /// cooperative pool (a blocked pool starves the tests running beside it).
    final class BodyRecorder: SessionDataDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var _bodies: [Int: Data] = [:]
        private var _errors: [Int: CourierError?] = [:]
        private let (ends, endsContinuation) = AsyncStream.makeStream(of: Int.self)
        var bodies: [Int: Data] { lock.withLock { _bodies } }
        var errors: [Int: CourierError?] { lock.withLock { _errors } }

        func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
            lock.withLock { _bodies[dataTask.taskIdentifier, default: Data()].append(data) }
        }

        func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
            lock.withLock { _errors[task.taskIdentifier] = error as? CourierError }
            endsContinuation.yield(task.taskIdentifier)
        }

        /// Whether `count` tasks ended within `timeout`.
        func waitForCompletions(_ count: Int, timeout: Duration = .seconds(60)) async -> Bool {
            let ends = self.ends
            return await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    var seen = 0
                    for await _ in ends {
                        seen += 1
                        if seen == count {
                            return true
                        }
                    }
                    return false
                }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
        }
    }

    @Test("beyond Apple: a background data task's body and a background upload from Data, through courierd")
    func dataTaskAndDataUpload() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let recorder = BodyRecorder()
        let session = Session(configuration: place.configuration("com.example.data"), delegate: recorder)
        let fetch = session.dataTask(with: server.url("/bytes/3000000?seed=5"))
        fetch.resume()
        let body = Data((0 ..< 700_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "PUT"
        let upload = session.uploadTask(with: request, from: body)
        upload.resume()
        #expect(await recorder.waitForCompletions(2))
        #expect(recorder.errors[fetch.taskIdentifier] == .some(nil))
        #expect(recorder.bodies[fetch.taskIdentifier] == TestServer.bytes(count: 3_000_000, seed: 5))
        #expect(recorder.errors[upload.taskIdentifier] == .some(nil))
        let answerBody = recorder.bodies[upload.taskIdentifier] ?? Data()
        let answer = try JSONSerialization.jsonObject(with: answerBody) as? [String: Any]
        #expect(answer?["length"] as? Int == body.count)
        #expect(upload.countOfBytesSent == Int64(body.count))
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("beyond Apple: a background data task outlives its app; the relaunched app receives its body")
    func dataTaskRelaunch() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let count = 1_000_000
        let url = server.url("/bytes/\(count)?seed=8&trickle=100000&interval=50")
        do {
            let first = Session(
                configuration: place.configuration("com.example.data-relaunch"),
                delegate: BodyRecorder()
            )
            first.dataTask(with: url).resume()
            first.abandonBackgroundConnection()
        }
        let recorder = BodyRecorder()
        let second = Session(configuration: place.configuration("com.example.data-relaunch"), delegate: recorder)
        #expect(second.allTasks.map { $0 is DataTask } == [true])
        #expect(await recorder.waitForCompletions(1))
        #expect(recorder.errors[1] == .some(nil))
        #expect(recorder.bodies[1] == TestServer.bytes(count: count, seed: 8))
        second.invalidateAndCancel()
        try await server.shutdown()
    }

    @Test("cancel(byProducingResumeData:) in a background session: resume data that a new background task resumes from")
    func resumeData() async throws {
        let server = try await TestServer.start()
        let place = Place()
        defer { place.cleanup() }
        let count = 3_000_000
        let url = server.url("/bytes/\(count)?seed=11&trickle=100000&interval=50")
        let recorder = Recorder()
        let session = Session(configuration: place.configuration("com.example.resume"), delegate: recorder)
        let task = session.downloadTask(with: url)
        task.resume()
        let deadline = Date().addingTimeInterval(20)
        while task.countOfBytesReceived < 300_000, Date() < deadline {
            usleep(20_000)
        }
        let produced = await withCheckedContinuation { continuation in
            task.cancel(byProducingResumeData: { continuation.resume(returning: $0) })
        }
        let resumeData = try #require(produced, "no resume data")
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier]??.code == .cancelled)

        let resumed = session.downloadTask(withResumeData: resumeData)
        resumed.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[resumed.taskIdentifier] == .some(nil))
        #expect(recorder.files[resumed.taskIdentifier] == TestServer.bytes(count: count, seed: 11))
        // courierd went on from its partial file: one didResumeAtOffset, past the bytes the first task had.
        let resumes = recorder.calls.filter { $0.hasPrefix("resumed \(resumed.taskIdentifier) ") }
        #expect(resumes.count == 1, "\(recorder.calls)")
        let offset = resumes.first.flatMap { Int64($0.split(separator: " ")[3]) } ?? 0
        #expect(offset >= 300_000 && offset < Int64(count), "\(resumes)")
        #expect(resumes.first?.hasSuffix("of \(count)") == true, "\(resumes)")
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("background rules: a second live session, a streamed body, a completion handler, no delegate: typed errors")
    func rules() async throws {
        let place = Place()
        defer { place.cleanup() }
        let url = URL(string: "http://127.0.0.1:9/x")!
        let recorder = Recorder()
        let session = Session(configuration: place.configuration("com.example.rules"), delegate: recorder)

        let streamed = session.uploadTask(withStreamedRequest: URLRequest(url: url))
        streamed.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[streamed.taskIdentifier]??.code == .unsupportedInBackgroundSession)

        let handled = await withCheckedContinuation { continuation in
            session.downloadTask(with: url) { _, _, error in continuation.resume(returning: error as? CourierError) }
                .resume()
        }
        #expect(handled?.code == .unsupportedInBackgroundSession)

        let twin = Recorder()
        let second = Session(configuration: place.configuration("com.example.rules"), delegate: twin)
        second.downloadTask(with: url).resume()
        #expect(twin.waitForCompletions(1))
        #expect(twin.errors.values.first??.code == .backgroundSessionInUse)

        let silent = Session(configuration: place.configuration("com.example.silent"))
        let orphan = silent.downloadTask(with: url)
        orphan.resume()
        let deadline = Date().addingTimeInterval(10)
        while orphan.state != .completed, Date() < deadline {
            usleep(10_000)
        }
        #expect((orphan.error as? CourierError)?.code == .unsupportedInBackgroundSession)
        session.invalidateAndCancel()
        second.invalidateAndCancel()
        silent.invalidateAndCancel()
    }
}
