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

/// Background transfers run by the real courierd against the real test server: the journaled events an app hears,
/// resumes after the daemon is killed, retries, uploads, cancels, and events delivered again until acknowledged.
@Suite("courierd transfers", .blockingWaits, .serialized)
struct BackgroundTransferTests {
    static let identifier = "com.example.podcasts.bg"
    static let session = IPCMessage.OpenSession(request: 1, identifier: identifier)

    static func download(
        _ identifier: Int,
        _ url: URL,
        description: String? = nil,
        priority: Float = 0.5
    ) -> IPCMessage.BackgroundTask {
        IPCMessage.BackgroundTask(
            identifier: identifier,
            kind: .download,
            request: TaskRequest(URLRequest(url: url)),
            taskDescription: description,
            priority: priority
        )
    }

    static func create(_ task: IPCMessage.BackgroundTask, on client: inout Client) throws {
        let answer = try client.request { .createTask(.init(request: $0, session: identifier, task: task)) }
        guard case .reply(let reply)? = answer, reply.result == .taskCreated else {
            Issue.record("task \(task.identifier) not created: \(String(describing: answer))")
            throw POSIXError(.EIO)
        }
    }

    static func isCompletion(_ event: IPCMessage.SequencedEvent) -> Bool {
        event.event.isCompletion
    }

    /// The finished file an event list hands over.
    static func finishedFile(_ events: [IPCMessage.SequencedEvent]) -> String? {
        for event in events {
            if let path = event.event.downloadedPath {
                return path
            }
        }
        return nil
    }

    @Test("a download: journaled, run, its events in order, the file handed over; acknowledged events and file go")
    func download() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, opened) = try Client.opening(Self.session, on: daemon)
        #expect(opened == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 1))))
        let count = 3 << 20
        try Self.create(
            Self.download(1, server.url("/bytes/\(count)?seed=4"), description: "episode-42"),
            on: &client
        )
        let events = try client.events(until: Self.isCompletion)
        let kinds = events.map { event -> String in
            switch event.event.payload {
            case .progress: "progress"
            case .relocated: "relocated"
            case .response(_, _, let head): "response \(head.status)"
            case .downloaded: "finished"
            case .complete(let completion): "completed \(completion.error.map { "\($0.code)" } ?? "ok")"
            default: "\(event.event)"
            }
        }
        #expect(Array(kinds.suffix(3)) == ["response 200", "finished", "completed ok"])
        #expect(events.map(\.sequence) == Array(events.map(\.sequence).sorted()))
        #expect(Set(events.map(\.sequence)).count == events.count)
        // The completion carries the whole count (no progress event of the last bytes comes before it); each
        // progress event before it a part of it.
        let whole = try #require(events.last?.event.progress)
        #expect(whole.received == Int64(count))
        #expect(whole.expectedToReceive == Int64(count))
        #expect(events.filter(\.event.isProgress).allSatisfy { $0.event.progress.received <= Int64(count) })
        let file = try #require(Self.finishedFile(events))
        #expect(FileManager.default.contents(atPath: file) == TestServer.bytes(count: count, seed: 4))
        #expect(file.hasPrefix(daemon.state.path))

        // Before the acknowledgement the task is listed as completed; after it, it is gone, and so is its file.
        guard case .reply(let listed)? = try client.request({ .listTasks(.init(request: $0, session: Self.identifier)) }),
            case .tasks(let snapshots) = listed.result
        else {
            Issue.record("no task list")
            return
        }
        #expect(snapshots.map(\.identifier) == [1])
        #expect(snapshots.first?.state == SessionTask.State.completed.rawValue)
        #expect(snapshots.first?.taskDescription == "episode-42")
        try client.send(.acknowledge(.init(session: Self.identifier, through: events.last!.sequence)))
        guard case .reply(let after)? = try client.request({ .listTasks(.init(request: $0, session: Self.identifier)) })
        else {
            Issue.record("no task list")
            return
        }
        #expect(after.result == .tasks(snapshots: []))
        #expect(eventuallyGone(file))
        client.close()
        #expect(daemon.stop() == .exited(0))
        // A clean stop folds the write-ahead log into the journal: the journal file alone is the whole state.
        let walPath = daemon.paths.journal.path + "-wal"
        let log = (try? FileManager.default.attributesOfItem(atPath: walPath))?[.size] as? Int
        #expect(log == nil || log == 0, "\(log ?? -1) bytes left in the write-ahead log")
        try await server.shutdown()
    }

    @Test("courierd SIGKILLed mid-download: restarted, it resumes from the bytes on disk with Range and If-Range")
    func resumeAfterKill() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let count = 4 << 20
        // About 2.5 s: 64 KiB every 40 ms.
        let url = server.url("/bytes/\(count)?seed=9&trickle=65536&interval=40")
        try Self.create(Self.download(1, url), on: &client)
        // Two coalesced progress events: at least one checkpoint is journaled.
        var progress = 0
        let before = try client.events { event in
            if event.event.isProgress {
                progress += 1
            }
            return progress == 2
        }
        #expect(progress == 2)
        client.close()
        daemon.kill()

        try daemon.start()
        (client, _) = try Client.opening(Self.session, on: daemon)
        let after = try client.events(until: Self.isCompletion)
        let events = before + after
        // Delivered again (not acknowledged), then new ones: sequences never go back within the new ones.
        let fresh = after.filter { $0.sequence > before.last!.sequence }
        #expect(fresh.map(\.sequence) == fresh.map(\.sequence).sorted())
        let resumedAt = fresh.compactMap { event -> Int64? in
            guard let resumed = event.event.resumedAt else {
                return nil
            }
            #expect(resumed.expectedTotal == Int64(count))
            return resumed.offset
        }
        #expect(resumedAt.count == 1)
        #expect((resumedAt.first ?? 0) > 0, "the download started again from zero")
        let file = try #require(Self.finishedFile(events))
        #expect(FileManager.default.contents(atPath: file) == TestServer.bytes(count: count, seed: 9))
        let ranged = server.requests.filter { request in request.headers.contains { $0.0.lowercased() == "range" } }
        #expect(ranged.count == 1)
        #expect(ranged.first?.headers.contains { $0.0.lowercased() == "if-range" && $0.1 == "\"\(count)-9\"" } == true)
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("the app's resume data taken over, courierd SIGKILLed before the attempt ran: it goes on from the file, not failing")
    func resumeDataTakenOverThenKilled() async throws {
        let server = try await TestServer.start()
        // One transfer at a time: the resumed attempt waits for the slot another task holds.
        let daemon = Daemon(arguments: ["--max-transfers", "1"])
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let count = 2 << 20
        let url = server.url("/bytes/\(count)?seed=12&trickle=65536&interval=50")
        let resumeData = try Self.resumeDataOfCancelledTask(1, url, on: &client)
        let partial = try #require(PartialDownload(resumeData: resumeData, directory: daemon.paths.partials)?.file)
        // Task 2 holds the slot (about 1.5 s); task 3 goes on from the resume data once it has it.
        try Self.create(Self.download(2, server.url("/bytes/1000000?seed=13&trickle=65536&interval=100")), on: &client)
        _ = try client.events { $0.task == 2 && $0.event.isProgress }
        let resumed = IPCMessage.BackgroundTask(
            identifier: 3,
            kind: .download,
            request: TaskRequest(URLRequest(url: url)),
            resumeData: resumeData
        )
        try Self.create(resumed, on: &client)
        // Its attempt is made (the file taken over and moved, its first checkpoint journaled), waiting for the slot.
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: partial), Date() < deadline {
            usleep(10_000)
        }
        usleep(200_000)
        client.close()
        daemon.kill()

        try daemon.start()
        (client, _) = try Client.opening(Self.session, on: daemon)
        defer { client.close() }
        let events = try client.events { $0.task == 3 && $0.event.isCompletion }
        let completion = events.last { $0.task == 3 && $0.event.isCompletion }?.event.completion
        #expect(completion != nil && completion?.error == nil, "task 3 ended with \(String(describing: completion))")
        // Its first checkpoint named the file where the attempt found it: it went on from its bytes.
        let resumedAt = events.compactMap { $0.task == 3 ? $0.event.resumedAt?.offset : nil }
        #expect(resumedAt.count == 1 && resumedAt[0] > 0, "resumed at \(resumedAt)")
        let file = try #require(Self.finishedFile(events.filter { $0.task == 3 }))
        #expect(FileManager.default.contents(atPath: file) == TestServer.bytes(count: count, seed: 12))
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    /// Task `task` downloads `url` until its first progress, is cancelled producing resume data, and its events are
    /// acknowledged: the resume data.
    static func resumeDataOfCancelledTask(_ task: Int, _ url: URL, on client: inout Client) throws -> Data {
        try create(download(task, url), on: &client)
        _ = try client.events { $0.event.isProgress }
        let cancel = try client.request {
            .command(.init(request: $0, session: identifier, task: task, verb: .cancelProducingResumeData))
        }
        guard case .reply? = cancel else {
            throw CourierError(.unknown, "cancel refused: \(String(describing: cancel))")
        }
        let cancelled = try client.events(until: isCompletion)
        let resumeData = try #require(cancelled.last?.event.completion?.error?.resumeData, "no resume data")
        try client.send(.acknowledge(.init(session: identifier, through: cancelled.last!.sequence)))
        return resumeData
    }

    /// What a crash can leave: the rename of the attempt's finished file kept, the commit that journaled its end lost
    /// (or the file lost): the journal's checkpoint names a file that is gone.
    @Test("the app's resume data taken over by a running attempt, courierd SIGKILLed, the file gone: it starts from zero, not failing")
    func resumeDataTakenOverThenLost() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let count = 2 << 20
        // About 3 s.
        let url = server.url("/bytes/\(count)?seed=14&trickle=65536&interval=100")
        let resumeData = try Self.resumeDataOfCancelledTask(1, url, on: &client)
        let resumed = IPCMessage.BackgroundTask(
            identifier: 2,
            kind: .download,
            request: TaskRequest(URLRequest(url: url)),
            resumeData: resumeData
        )
        try Self.create(resumed, on: &client)
        // A progress event: the attempt runs from the staging directory, and a checkpoint names its file there.
        _ = try client.events { $0.task == 2 && $0.event.isProgress }
        client.close()
        daemon.kill()
        let staged = FileManager.default.enumerator(atPath: daemon.paths.staging.path)?.allObjects as? [String] ?? []
        let files = staged.filter { $0.hasSuffix(".part") }
        #expect(files.count == 1, "\(staged)")
        for file in files {
            try FileManager.default.removeItem(at: daemon.paths.staging.appendingPathComponent(file))
        }

        try daemon.start()
        (client, _) = try Client.opening(Self.session, on: daemon)
        defer { client.close() }
        let events = try client.events { $0.task == 2 && $0.event.isCompletion }
        let completion = events.last { $0.task == 2 && $0.event.isCompletion }?.event.completion
        #expect(completion != nil && completion?.error == nil, "task 2 ended with \(String(describing: completion))")
        let file = try #require(Self.finishedFile(events.filter { $0.task == 2 }))
        #expect(FileManager.default.contents(atPath: file) == TestServer.bytes(count: count, seed: 14))
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("courierd --limit-rate caps what all its transfers receive together (6 MiB at 1 MiB/s: about 6 s)")
    func limitRate() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--limit-rate", "1M"])
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let count = 3 * 1024 * 1024
        let started = ContinuousClock.now
        for seed in 1...2 {
            try Self.create(Self.download(seed, server.url("/bytes/\(count)?seed=\(seed + 20)")), on: &client)
        }
        var completions = 0
        let events = try client.events { event in
            completions += Self.isCompletion(event) ? 1 : 0
            return completions == 2
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        #expect(events.filter(Self.isCompletion).allSatisfy { $0.event.endingError == .some(nil) })
        // 6 MiB at 1 MiB/s: never faster than the limit allows, and not much slower.
        #expect(seconds > 5.4 && seconds < 7.5, "\(seconds) s")
        // What `courier daemon status --json` shows: the figures in a new connection's welcome.
        var status = try Client(daemon.socket)
        try status.send(.hello(.init(app: "status", pid: getpid())))
        guard case .welcome(let welcome)? = try status.receive(), let figures = welcome.figures else {
            Issue.record("no figures in the welcome")
            return
        }
        #expect(figures.completed["success"] == 2 && figures.failures.isEmpty && figures.retries == 0)
        #expect(figures.bytesReceived == Int64(2 * count))
        status.close()
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("with every slot taken, a high-priority task preempts a low one, which goes on later with Range")
    func priorityPreempts() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--max-transfers", "1"])
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let count = 3_000_000
        // About 1.3 MB/s: still running when the high-priority task comes.
        let slow = server.url("/bytes/\(count)?seed=31&trickle=65536&interval=50")
        try Self.create(Self.download(1, slow, priority: 0.1), on: &client)
        var events = try client.events { $0.task == 1 && $0.event.progress.received > 300_000 }
        try Self.create(Self.download(2, server.url("/bytes/200000?seed=32"), priority: 0.9), on: &client)
        var completions: [Int] = []
        events += try client.events { event in
            if Self.isCompletion(event) {
                completions.append(event.task)
            }
            return completions.count == 2
        }
        #expect(completions == [2, 1], "the high-priority task did not finish first")
        #expect(events.filter(Self.isCompletion).allSatisfy { $0.event.endingError == .some(nil) })
        let files = events.compactMap { event in event.event.downloadedPath.map { (event.task, $0) } }
        let low = try #require(files.first { $0.0 == 1 }?.1)
        #expect(FileManager.default.contents(atPath: low) == TestServer.bytes(count: count, seed: 31))
        // The low task's first exchange was cut; its next asked only for the rest.
        let lowRequests = server.requests.filter { $0.uri.hasPrefix("/bytes/\(count)?seed=31") }
        let ranges = lowRequests.map { request in request.headers.first { $0.0.lowercased() == "range" }?.1 }
        #expect(ranges.first == .some(nil))
        #expect(ranges.dropFirst().contains { $0?.hasPrefix("bytes=") == true && $0 != "bytes=0-" }, "\(ranges)")
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("a connection cut mid-body is retried after the backoff and resumes where it stopped")
    func retry() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let count = 300_000
        try Self.create(Self.download(1, server.url("/bytes/\(count)?seed=2&cut=120000")), on: &client)
        let events = try client.events(until: Self.isCompletion)
        guard let error = events.last?.event.endingError else {
            Issue.record("no completion")
            return
        }
        #expect(error == nil)
        let file = try #require(Self.finishedFile(events))
        #expect(FileManager.default.contents(atPath: file) == TestServer.bytes(count: count, seed: 2))
        // Three exchanges: 0-, then 120000-, then 240000- (an attempt that failed before its first byte, as one may on
        // a loaded machine, asks again from the same offset: never from an earlier one).
        let ranges = server.requests.compactMap { request in
            request.headers.first { $0.0.lowercased() == "range" }?.1
        }
        let resumedFrom = ranges.enumerated().filter { $0.offset == 0 || ranges[$0.offset - 1] != $0.element }
        #expect(resumedFrom.map(\.element) == ["bytes=120000-", "bytes=240000-"], "\(ranges)")
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("an upload from a file the app deletes at once: the daemon's copy is sent, the response body comes back")
    func upload() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        let body = TestServer.bytes(count: 700_000, seed: 5)
        let source = daemon.root.appendingPathComponent("body.bin")
        try body.write(to: source)
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "PUT"
        let task = IPCMessage.BackgroundTask(
            identifier: 1,
            kind: .upload,
            request: TaskRequest(request),
            uploadFile: source.path
        )
        try Self.create(task, on: &client)
        try FileManager.default.removeItem(at: source)
        let events = try client.events(until: Self.isCompletion)
        var answer: Data?
        var status: Int?
        for event in events {
            answer = event.event.body ?? answer
            status = event.event.responseHead?.status ?? status
        }
        #expect(status == 200)
        let json = try JSONSerialization.jsonObject(with: try #require(answer)) as? [String: Any]
        #expect(json?["length"] as? Int == body.count)
        #expect(json?["sha256"] as? String == TestServer.sha256Hex(body))
        #expect(events.last?.event.endingError == .some(nil))
        // The daemon's copy goes with the task (right after the completion is journaled and sent).
        let uploadsDirectory = daemon.state.appendingPathComponent("uploads").path
        let deadline = Date().addingTimeInterval(5)
        while !((try? FileManager.default.contentsOfDirectory(atPath: uploadsDirectory)) ?? []).isEmpty, Date() < deadline {
            usleep(10_000)
        }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: uploadsDirectory)) ?? []).isEmpty)
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    /// How a running task is ended from outside.
    enum Stopper: String, CaseIterable, Sendable {
        case cancel
        /// `courier kill APP`.
        case forceQuit
        /// The app's `Application.forceQuit(exiting:)`.
        case applicationForceQuit
    }

    @Test(
        "cancel and force-quit (the tool's or the app's): the task completes with cancelled (and the reason); an unknown task is an error",
        arguments: Stopper.allCases
    )
    func cancel(by stopper: Stopper) async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        try Self.create(Self.download(1, server.url("/bytes/1000000?trickle=1000&interval=50")), on: &client)
        switch stopper {
        case .cancel, .forceQuit:
            let answer = try client.request { request -> IPCMessage in
                if stopper == .cancel {
                    .command(.init(request: request, session: Self.identifier, task: 1, verb: .cancel))
                } else {
                    .forceQuit(.init(request: request, app: "com.example.podcasts"))
                }
            }
            #expect(answer.map { if case .reply = $0 { true } else { false } } == true)
        case .applicationForceQuit:
            try Application.forceQuit(app: "com.example.podcasts", paths: daemon.paths)
        }
        let events = try client.events(until: Self.isCompletion)
        guard let error = events.last?.event.endingError else {
            Issue.record("no completion")
            return
        }
        #expect(error?.code == .cancelled, "\(events.map(\.event.payload))")
        if stopper == .cancel {
            #expect(error?.backgroundTaskCancelledReason == nil)
        } else {
            #expect(error?.message.contains("force-quit com.example.podcasts") == true)
            #expect(error?.backgroundTaskCancelledReason == .userForceQuitApplication)
        }
        // Until the app hears of it, `listTasks` says how the task ended (`courier tasks`: cancelled, not completed).
        let listed = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
        guard case .reply(let reply)? = listed, case .tasks(let snapshots) = reply.result else {
            Issue.record("no task list: \(String(describing: listed))")
            return
        }
        #expect(snapshots.first?.outcome?.code == .cancelled)
        #expect(
            snapshots.first?.outcome?.backgroundTaskCancelledReason
                == (stopper == .cancel ? nil : .userForceQuitApplication)
        )
        let unknown = try client.request { .command(.init(request: $0, session: Self.identifier, task: 42, verb: .cancel)) }
        guard case .failure? = unknown else {
            Issue.record("a command for an unknown task was answered \(String(describing: unknown))")
            return
        }
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("an app that dies right after creating tasks: the next connection to open the session finds every one")
    func diesRightAfterCreating() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let (first, _) = try Client.opening(Self.session, on: daemon)
        // Written, not answered: the app is gone before courierd has read them.
        let count = 200
        for task in 1...count {
            let download = Self.download(task, server.url("/bytes/1024?seed=\(task)&trickle=256&interval=100"))
            try first.send(.createTask(.init(request: UInt64(1_000 + task), session: Self.identifier, task: download)))
        }
        first.close()
        var (second, opened) = try Client.opening(Self.session, on: daemon)
        defer { second.close() }
        #expect(opened == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: count + 1))))
        let tasks = try second.tasks(of: Self.identifier, timeout: 0) { _ in true }
        #expect(tasks.count == count)
        try await server.shutdown()
    }

    @Test("the task list says a download ended only with how it ended: its status and its counts, never before")
    func listedEndsAreJournaledEnds() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (app, _) = try Client.opening(Self.session, on: daemon)
        defer { app.close() }
        let count = 200
        let length = 16_384
        for task in 1...count {
            // In four pieces, 0 to 30 ms apart: the ends spread over the lists.
            let url = server.url("/bytes/\(length)?seed=\(task)&trickle=4096&interval=\(task % 4 * 10)")
            try Self.create(Self.download(task, url), on: &app)
        }
        // Listed while the downloads end (a batch's ends are journaled together, a moment after their machines
        // finished): a task listed as ended says how.
        var looker = try Client.looking(at: daemon.socket)
        defer { looker.close() }
        var lists = 0
        var endsSeen = Set<Int>()
        _ = try looker.tasks(of: Self.identifier, timeout: 60) { snapshots in
            lists += 1
            for snapshot in snapshots where snapshot.state == SessionTask.State.completed.rawValue {
                endsSeen.insert(snapshot.identifier)
                #expect(snapshot.statusCode == 200, "task \(snapshot.identifier) listed as ended with no status")
                #expect(snapshot.countOfBytesReceived == Int64(length), "task \(snapshot.identifier)")
            }
            return snapshots.count == count
                && snapshots.allSatisfy { $0.state == SessionTask.State.completed.rawValue }
        }
        #expect(endsSeen.count == count, "\(lists) lists")
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("a client that dies before acknowledging gets every event again, in order, and none after acknowledging")
    func redelivery() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        try Self.create(Self.download(1, server.url("/bytes/1000?seed=1")), on: &client)
        try Self.create(Self.download(2, server.url("/bytes/2000?seed=2")), on: &client)
        var completions = 0
        let first = try client.events { event in
            if Self.isCompletion(event) {
                completions += 1
            }
            return completions == 2
        }
        client.close()

        var answer: IPCMessage?
        (client, answer) = try Client.opening(Self.session, on: daemon)
        #expect(answer == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 3))))
        let replay = try #require(try client.nextBatch())
        #expect(replay.finished)
        #expect(replay.events == first)
        client.close()

        (client, answer) = try Client.opening(Self.session, on: daemon)
        #expect(answer == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 3))))
        #expect(try client.nextBatch()?.events == first)
        try client.send(.acknowledge(.init(session: Self.identifier, through: first.last!.sequence)))
        // Answered after the acknowledgement (frames of a connection are handled in order).
        _ = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
        client.close()
        (client, _) = try Client.opening(Self.session, on: daemon)
        // Anything pending would have been sent before this answer.
        _ = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
        #expect(client.events.isEmpty)
        for path in first.compactMap({ event -> String? in
            event.event.downloadedPath
        }) {
            #expect(eventuallyGone(path))
        }
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("a discretionary task on battery power waits, and says why")
    func discretionaryWaits() async throws {
        let daemon = Daemon(environment: ["COURIER_POWER": "battery"])
        defer { daemon.cleanup() }
        try daemon.start()
        var session = Self.session
        session.isDiscretionary = true
        var (client, _) = try Client.opening(session, on: daemon)
        try Self.create(Self.download(1, URL(string: "http://127.0.0.1:9/x")!), on: &client)
        let snapshots = try client.tasks(of: Self.identifier) { $0.first?.waitingReason != nil }
        #expect(snapshots.first?.state == SessionTask.State.suspended.rawValue)
        #expect(snapshots.first?.waitingReason == "waiting for external power (discretionary)")
        client.close()
        #expect(daemon.stop() == .exited(0))
    }

    @Test("on battery, a discretionary task that declares itself small runs; a large one waits; both sizes are listed")
    func declaredSizes() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(environment: ["COURIER_POWER": "battery"])
        defer { daemon.cleanup() }
        try daemon.start()
        var session = Self.session
        session.isDiscretionary = true
        var (client, _) = try Client.opening(session, on: daemon)
        var small = Self.download(1, server.url("/bytes/400000?trickle=16384&interval=50"))
        small.spec.task?.countOfBytesClientExpectsToReceive = 500_000
        var large = Self.download(2, server.url("/bytes/4000"))
        large.spec.task?.countOfBytesClientExpectsToReceive = 200 << 20
        try Self.create(small, on: &client)
        try Self.create(large, on: &client)
        let snapshots = try client.tasks(of: Self.identifier) { snapshots in
            snapshots.contains { $0.identifier == 1 && $0.state == SessionTask.State.running.rawValue }
                && snapshots.contains { $0.identifier == 2 && $0.waitingReason != nil }
        }
        let byIdentifier = Dictionary(uniqueKeysWithValues: snapshots.map { ($0.identifier, $0) })
        #expect(byIdentifier[1]?.waitingReason == nil)
        #expect(byIdentifier[2]?.waitingReason == "waiting for external power (discretionary)")
        #expect(byIdentifier[2]?.task?.spec.task?.countOfBytesClientExpectsToReceive == 200 << 20)
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("a task created while the app is in the background is discretionary; one created after it came back is not")
    func createdInBackgroundIsDiscretionary() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(environment: ["COURIER_POWER": "battery"])
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon, inForeground: false)
        let slow = server.url("/bytes/400000?trickle=16384&interval=50")
        try Self.create(Self.download(1, slow), on: &client)
        try client.send(.appState(.init(inForeground: true)))
        try Self.create(Self.download(2, slow), on: &client)
        let snapshots = try client.tasks(of: Self.identifier) { snapshots in
            snapshots.contains { $0.identifier == 1 && $0.waitingReason != nil }
                && snapshots.contains { $0.identifier == 2 && $0.state == SessionTask.State.running.rawValue }
        }
        let byIdentifier = Dictionary(uniqueKeysWithValues: snapshots.map { ($0.identifier, $0) })
        #expect(
            byIdentifier[1]?.waitingReason
                == "waiting for external power (discretionary: created while the app was in the background)"
        )
        #expect(byIdentifier[1]?.task?.createdInBackground == true)
        #expect(byIdentifier[2]?.waitingReason == nil)
        #expect(byIdentifier[2]?.task?.createdInBackground == nil)
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }

    @Test("a client killed during delivery 100 times: every event comes again until acknowledged, none after")
    func killedDuringDelivery() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        for task in 1...10 {
            try Self.create(Self.download(task, server.url("/bytes/\(task * 1000)?seed=\(task)")), on: &client)
        }
        var completions = 0
        let all = try client.events { event in
            if Self.isCompletion(event) {
                completions += 1
            }
            return completions == 10
        }
        client.close()
        var generator = SystemRandomNumberGenerator()
        var acknowledged: UInt64 = 0
        let last = try #require(all.last?.sequence)
        for round in 1...100 {
            (client, _) = try Client.opening(Self.session, on: daemon)
            // The replay is sent before any later request is answered.
            _ = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
            let replay = client.events.flatMap(\.events)
            // Everything not acknowledged, in order, and nothing that was.
            #expect(replay == all.filter { $0.sequence > acknowledged }, "round \(round)")
            // The app's delegate got through part of the batch, acknowledged it (sometimes), and died.
            if !replay.isEmpty, Bool.random(using: &generator) {
                let delivered = replay[Int.random(in: 0..<replay.count, using: &generator)].sequence
                try client.send(.acknowledge(.init(session: Self.identifier, through: delivered)))
                _ = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
                acknowledged = max(acknowledged, delivered)
            }
            client.close()
        }
        (client, _) = try Client.opening(Self.session, on: daemon)
        try client.send(.acknowledge(.init(session: Self.identifier, through: last)))
        guard case .reply(let listed)? = try client.request({ .listTasks(.init(request: $0, session: Self.identifier)) })
        else {
            Issue.record("no task list")
            return
        }
        #expect(listed.result == .tasks(snapshots: []))
        client.close()
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }
}
