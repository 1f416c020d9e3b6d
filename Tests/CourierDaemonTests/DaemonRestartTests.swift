import Courier
import CourierDaemon
import CourierTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One background `Session` of this process against a courierd that is killed and started again under it: the
/// session reconnects by itself, and its commands reach courierd in the order the tasks made them.
@Suite("a background session outlives courierd", .blockingWaits, .serialized)
struct DaemonRestartTests {
    typealias Recorder = BackgroundSessionTests.Recorder

    /// Never relaunched: the app is this test process, and a relaunch would run the whole suite again beside it.
    static func configuration(_ identifier: String, on daemon: Daemon) -> SessionConfiguration {
        var configuration = SessionConfiguration.background(withIdentifier: identifier)
        configuration.daemonPaths = daemon.paths
        configuration.timeoutIntervalForRequest = 30
        configuration.sessionSendsLaunchEvents = false
        return configuration
    }

    @Test("courierd SIGKILLed and restarted 6 times during 8 downloads: the one session hears every event once")
    func sessionOutlivesRestarts() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let recorder = Recorder()
        let session = Session(configuration: Self.configuration("com.example.restarts", on: daemon), delegate: recorder)
        var expected: [Int: Data] = [:]
        var tasks: [Int: DownloadTask] = [:]
        for index in 1...8 {
            let count = 800_000 + index * 100_000
            // 32 KiB every 40 ms: each download lasts 1 to 2 seconds, across several restarts.
            let task = session.downloadTask(with: server.url("/bytes/\(count)?seed=\(index)&trickle=32768&interval=40"))
            task.resume()
            expected[task.taskIdentifier] = TestServer.bytes(count: count, seed: index)
            tasks[task.taskIdentifier] = task
        }
        for _ in 1...6 {
            usleep(300_000)
            daemon.killServing()
            try daemon.start()
        }
        #expect(recorder.waitForCompletions(8, timeout: 60), "\(recorder.calls)")
        let calls = recorder.calls
        for (task, data) in expected {
            #expect(recorder.errors[task] == .some(nil), "task \(task): \(String(describing: recorder.errors[task]))")
            #expect(recorder.files[task] == data, "task \(task)")
            // The entity the app asked for, whatever ranges courierd used underneath: never a 206 or a 416.
            #expect(recorder.statuses[task] == 200, "task \(task)")
            #expect(tasks[task]?.receivedHead?.value("Content-Length") == String(data.count), "task \(task)")
            #expect(tasks[task]?.receivedHead?.value("Content-Range") == nil, "task \(task)")
            #expect(calls.filter { $0 == "completed \(task)" }.count == 1, "task \(task): \(calls)")
            #expect(calls.filter { $0 == "finished \(task)" }.count == 1, "task \(task): \(calls)")
        }
        // courierd went on from the bytes on disk after the kills.
        #expect(calls.contains { $0.hasPrefix("resumed ") }, "\(calls)")
        // Only a relaunch's replay ends with urlSessionDidFinishEvents: a reconnection is invisible to the app.
        #expect(!calls.contains("didFinishEvents"), "\(calls)")
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("a second Session with a live identifier is refused at once; courierd restarted under both, the first loses nothing")
    func secondSessionWithLiveIdentifier() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let identifier = "com.example.twice"
        let first = Recorder()
        let session = Session(configuration: Self.configuration(identifier, on: daemon), delegate: first)
        var expected: [Int: Data] = [:]
        for index in 1...20 {
            let count = 300_000 + index * 20_000
            let task = session.downloadTask(with: server.url("/bytes/\(count)?seed=\(index)&trickle=32768&interval=30"))
            task.resume()
            expected[task.taskIdentifier] = TestServer.bytes(count: count, seed: index)
        }
        // An app written for the time a session did not reconnect by itself makes another one for the identifier,
        // right after courierd went away (before the first could reconnect).
        usleep(200_000)
        daemon.killServing()
        try daemon.start()
        let second = Recorder()
        let again = Session(configuration: Self.configuration(identifier, on: daemon), delegate: second)
        let refused = again.downloadTask(with: server.url("/bytes/1000?seed=99"))
        refused.resume()
        #expect(second.waitForCompletions(1, timeout: 10))
        #expect(second.errors[refused.taskIdentifier]??.code == .backgroundSessionInUse)
        for _ in 1...5 {
            usleep(300_000)
            daemon.killServing()
            try daemon.start()
        }
        let more = again.downloadTask(with: server.url("/bytes/1000?seed=98"))
        more.resume()
        #expect(second.waitForCompletions(1, timeout: 10))
        #expect(second.errors[more.taskIdentifier]??.code == .backgroundSessionInUse)
        #expect(first.waitForCompletions(expected.count, timeout: 60), "\(first.calls)")
        for (task, data) in expected {
            #expect(first.errors[task] == .some(nil), "task \(task): \(String(describing: first.errors[task]))")
            #expect(first.files[task] == data, "task \(task)")
        }
        again.invalidateAndCancel()
        session.finishTasksAndInvalidate()
        // Once the first is invalidated (its delegate told so), the identifier is free for a new Session of this
        // process.
        #expect(first.waitForInvalidation())
        let third = Recorder()
        let later = Session(configuration: Self.configuration(identifier, on: daemon), delegate: third)
        let fresh = later.downloadTask(with: server.url("/bytes/1000?seed=97"))
        fresh.resume()
        #expect(third.waitForCompletions(1, timeout: 30))
        #expect(third.errors[fresh.taskIdentifier] == .some(nil), "\(String(describing: third.errors[fresh.taskIdentifier]))")
        later.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("a segmented download: courierd SIGKILLed mid-way resumes each segment from its bytes; the SHA-256 is right")
    func segmentedDownloadOutlivesKill() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let recorder = Recorder()
        let session = Session(configuration: Self.configuration("com.example.segments", on: daemon), delegate: recorder)
        let count = 8 * 1024 * 1024
        // About 330 kB/s per connection, four connections: some 6 s in all, so the kill lands mid-way.
        let path = "/bytes/\(count)?seed=44&trickle=65536&interval=200"
        let task = session.downloadTask(with: server.url(path))
        task.maximumSegments = 4
        task.expectedChecksum = Checksum("sha-256=" + TestServer.sha256Hex(TestServer.bytes(count: count, seed: 44)))
        task.resume()
        // Past two checkpoints (one a second) of every segment.
        usleep(2_500_000)
        daemon.killServing()
        try daemon.start()
        #expect(recorder.waitForCompletions(1, timeout: 60), "\(recorder.calls)")
        #expect(recorder.errors[task.taskIdentifier] == .some(nil), "\(String(describing: recorder.errors))")
        #expect(recorder.files[task.taskIdentifier].map(TestServer.sha256Hex) == TestServer.sha256Hex(
            TestServer.bytes(count: count, seed: 44)))
        // Before the kill: a plain GET and three ranges from each segment's start. After it: one range per segment,
        // each from where that segment had got to (never from its start again).
        let ranges = server.requests.filter { $0.uri == path }.map { $0.header("Range") }
        let segmentStarts = [0, 2_097_152, 4_194_304, 6_291_456]
        let resumedFrom = ranges.dropFirst(4).compactMap { $0 }.compactMap { range -> Int? in
            Int(range.dropFirst("bytes=".count).prefix { $0 != "-" })
        }
        #expect(resumedFrom.count >= 4, "\(ranges)")
        for start in segmentStarts {
            #expect(resumedFrom.contains { $0 > start && $0 < start + 2_097_152 }, "segment at \(start): \(ranges)")
        }
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("a resumable upload: courierd SIGKILLed mid-way asks the server's offset and sends only the rest")
    func resumableUploadOutlivesKill() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let recorder = Recorder()
        let session = Session(configuration: Self.configuration("com.example.uploads", on: daemon), delegate: recorder)
        let count = 4_000_000
        let file = daemon.root.appendingPathComponent("body.bin")
        try TestServer.bytes(count: count, seed: 45).write(to: file)
        var request = URLRequest(url: server.url("/resumable"))
        request.httpMethod = "PUT"
        let task = session.uploadTask(with: request, fromFile: file)
        // 1 MB/s: some 4 s, so the kill lands mid-way, after a checkpoint journaled the upload's resource.
        task.maximumBytesPerSecond = 1_000_000
        task.resume()
        usleep(2_200_000)
        daemon.killServing()
        try daemon.start()
        #expect(recorder.waitForCompletions(1, timeout: 60), "\(recorder.calls)")
        #expect(recorder.errors[task.taskIdentifier] == .some(nil), "\(String(describing: recorder.errors))")
        // The first PUT was cut by the kill (the server records a request at its end: never); after the restart, a
        // HEAD for the offset and a PATCH with the rest. No second whole PUT.
        let exchanges = server.requests.map { "\($0.method) \($0.uri.prefix(10))" }
        #expect(!exchanges.contains("PUT /resumable"), "\(exchanges)")
        let patch = try #require(server.requests.last { $0.method == "PATCH" }, "\(exchanges)")
        let offset = try #require(patch.header("Upload-Offset").flatMap(Int.init))
        #expect(offset > 500_000 && offset < count, "offset \(offset)")
        #expect(patch.bodyLength == count - offset)
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("Session.init does no I/O: it returns while courierd does not answer; getAllTasks and the tasks wait for it")
    func initDoesNotWaitForCourierd() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let pid = try #require(daemon.pid)
        // Stopped: its socket still accepts (the kernel's backlog), nothing answers the hello.
        Glibc.kill(pid, SIGSTOP)
        let continued = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 3) {
            Glibc.kill(pid, SIGCONT)
            continued.signal()
        }
        let recorder = Recorder()
        let started = Date()
        let session = Session(configuration: Self.configuration("com.example.init", on: daemon), delegate: recorder)
        let made = Date().timeIntervalSince(started)
        // Before this, the initialiser connected and waited for courierd's answer: here until the SIGCONT, 3 s on.
        #expect(made < 1.5, "Session.init took \(made) s")
        let listed = DispatchSemaphore(value: 0)
        session.getAllTasks { _ in listed.signal() }
        #expect(listed.wait(timeout: .now() + 0.5) == .timedOut, "getAllTasks answered before the session was open")
        #expect(continued.wait(timeout: .now() + 10) == .success)
        #expect(listed.wait(timeout: .now() + 10) == .success)
        let task = session.downloadTask(with: server.url("/bytes/100000?seed=9"))
        task.resume()
        #expect(task.taskIdentifier == 1)
        #expect(recorder.waitForCompletions(1, timeout: 30))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 100_000, seed: 9))
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("tasks made while courierd is down wait for it, and run once it is back")
    func taskMadeWhileDown() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let recorder = Recorder()
        let session = Session(configuration: Self.configuration("com.example.down", on: daemon), delegate: recorder)
        daemon.killServing()
        // resume() waits for the session's new connection: the session starts courierd when none came back within
        // its grace period.
        let task = session.downloadTask(with: server.url("/bytes/300000?seed=5"))
        task.resume()
        #expect(task.error == nil)
        #expect(recorder.waitForCompletions(1, timeout: 30))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 300_000, seed: 5))
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }

    @Test("suspend() then resume() 1,000 times: courierd gets them in order and the task runs to its end")
    func commandsInOrder() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let recorder = Recorder()
        let session = Session(configuration: Self.configuration("com.example.order", on: daemon), delegate: recorder)
        let task = session.downloadTask(with: server.url("/bytes/2000000?seed=9&trickle=65536&interval=20"))
        task.resume()
        for _ in 0..<1000 {
            task.suspend()
            task.resume()
        }
        #expect(recorder.waitForCompletions(1, timeout: 60), "the task was left suspended: \(recorder.calls)")
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        #expect(recorder.files[task.taskIdentifier] == TestServer.bytes(count: 2_000_000, seed: 9))
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }
}

/// The same with a real app process: the probe makes 200 downloads with one `Session` and keeps it while courierd is
/// SIGKILLed and started again 20 times; it is never relaunched, never makes a second session, and hears every event.
@Suite("an app process keeps its background session across courierd restarts", .blockingWaits, .serialized)
struct DaemonRestartProcessTests {
    @Test("200 downloads, courierd SIGKILLed and restarted 20 times: every file, each completion once, all 200")
    func appOutlivesRestarts() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        var arguments = ["--runtime", daemon.runtime.path, "--state", daemon.state.path, "--log", log, "--stay"]
        var expected: [Int: Data] = [:]
        for index in 1...200 {
            let count = 100_000 + (index % 7) * 50_000
            // 16 KiB every 10 ms: from 60 to 250 ms each, 6 at a time, across the restarts.
            arguments += [
                "--download", server.url("/bytes/\(count)?seed=\(index)&trickle=16384&interval=10").absoluteString,
            ]
            expected[index] = TestServer.bytes(count: count, seed: index)
        }
        let app = try ChildProcess(
            try siblingExecutable("BackgroundProbe"),
            arguments: arguments,
            environment: daemon.clientEnvironment,
            standardError: .inherit
        )
        defer {
            app.send(SIGKILL)
            _ = app.wait(timeout: .seconds(10))
        }
        #expect(RelaunchTests.wait(for: "journaled", in: log, timeout: 60))
        var kills = 0
        while kills < 20, !RelaunchTests.wait(for: "exit", in: log, timeout: 0.3) {
            daemon.killServing()
            try daemon.start()
            kills += 1
        }
        #expect(kills >= 10, "the downloads ended after \(kills) kills")
        let exited = RelaunchTests.wait(for: "exit", in: log, timeout: 120)
        let entries = RelaunchTests.entries(log)
        #expect(exited, "the app did not see all its tasks end")
        #expect(entries.filter { $0["event"] as? String == "relaunched" }.isEmpty, "the app was relaunched")
        #expect(Set(entries.compactMap { $0["pid"] as? Int }) == [Int(app.pid)])
        var completions: [Int: Int] = [:]
        for entry in entries where entry["event"] as? String == "completed" {
            let task = try #require(entry["task"] as? Int)
            completions[task, default: 0] += 1
            #expect(entry["error"] == nil, "task \(task): \(entry["error"] ?? "")")
            #expect(entry["status"] as? Int == 200, "task \(task)")
        }
        #expect(completions.keys.sorted() == Array(1...200))
        #expect(completions.values.allSatisfy { $0 == 1 }, "\(completions.filter { $0.value != 1 })")
        for (task, data) in expected {
            let copy = daemon.root.appendingPathComponent("task-\(task).bin").path
            #expect(FileManager.default.contents(atPath: copy) == data, "task \(task)")
        }
        try await server.shutdown()
    }
}
