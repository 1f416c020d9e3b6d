import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Polls `condition` every 20 ms until it holds, for at most `timeout`. For states with no event to await
/// (counters on the server, file descriptors).
func eventually(
    _ timeout: Duration = .seconds(10),
    _ what: String = "condition",
    _ condition: @Sendable () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline {
            throw TimedOut(what: what, events: [])
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

@Suite("Task lifecycle", .blockingWaits, .timeLimit(.minutes(1)))
struct LifecycleTests {
    @Test("suspend really pauses: no bytes flow until resume")
    func suspendPauses() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let count = 3_000_000
            let task = session.downloadTask(with: server.url("/bytes/\(count)?seed=31&trickle=8192&interval=10"))
            task.resume()
            try await delegate.log.wait { events in
                events.contains {
                    if case .wrote(_, _, let total, _) = $0 { return total > 100_000 } else { return false }
                }
            }
            task.suspend()
            #expect(task.state == .suspended)
            // Let in-flight events drain, then nothing may move for a while.
            try await Task.sleep(for: .milliseconds(300))
            let paused = task.countOfBytesReceived
            try await Task.sleep(for: .milliseconds(800))
            #expect(task.countOfBytesReceived == paused, "bytes flowed while suspended")
            #expect(paused < Int64(count))
            task.resume()
            #expect(task.state == .running)
            let outcome12 = try await delegate.completion(of: task)
            #expect(outcome12 == nil)
            #expect(task.countOfBytesReceived == Int64(count))
        }
    }

    @Test("cancel: completes once with .cancelled, also before resume")
    func cancel() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/bytes/5000000?trickle=10000&interval=10"))
            task.resume()
            try await delegate.log.wait { $0.contains { if case .data = $0 { return true } else { return false } } }
            task.cancel()
            task.cancel()
            let outcome13 = try await delegate.completion(of: task)
            #expect(outcome13?.code == .cancelled)
            #expect(task.state == .completed)
            #expect(CourierError.Code.of(task.error) == .cancelled)
            let never = session.dataTask(with: server.url("/bytes/1"))
            never.cancel()
            let outcome14 = try await delegate.completion(of: never)
            #expect(outcome14?.code == .cancelled)
            never.resume()
            // One more task to flush the queue, then count.
            let probe = session.dataTask(with: server.url("/bytes/1"))
            probe.resume()
            try await delegate.completion(of: probe)
            for cancelled in [task, never] {
                #expect(
                    delegate.events(of: cancelled).filter {
                        if case .completed = $0 { return true } else { return false }
                    }.count == 1
                )
            }
        }
    }

    @Test("finishTasksAndInvalidate lets tasks finish, then didBecomeInvalid; new tasks are refused")
    func finishAndInvalidate() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            let tasks = (0..<5).map { session.dataTask(with: server.url("/bytes/20000?seed=\($0)&delay=100")) }
            tasks.forEach { $0.resume() }
            session.finishTasksAndInvalidate()
            let events = try await delegate.log.wait {
                $0.contains { if case .invalid = $0 { return true } else { return false } }
            }
            guard case .invalid = events.last else {
                Issue.record("didBecomeInvalid is not last: \(events)")
                return
            }
            for task in tasks {
                #expect(
                    events.contains {
                        if case .completed(task.taskIdentifier, nil) = $0 { return true } else { return false }
                    }
                )
            }
            try await eventually { session.delegate == nil }
            let late = session.dataTask(with: server.url("/bytes/1"))
            late.resume()
            let error = try await withTimeout {
                await withCheckedContinuation { continuation in
                    let task = session.dataTask(with: server.url("/bytes/1")) { _, _, error in
                        continuation.resume(returning: CourierError.Code.of(error))
                    }
                    task.resume()
                }
            }
            #expect(error == .sessionInvalidated)
        }
    }

    @Test("didBecomeInvalid comes after every completion, with tasks ending on both loop threads at once")
    func invalidationAfterEveryCompletion() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.engineLoopCount = 2
            for round in 0..<10 {
                let (session, delegate) = makeRecordingSession(configuration)
                let tasks = (0..<8).map {
                    session.dataTask(with: server.url("/bytes/64?seed=\(round * 8 + $0)"))
                }
                tasks.forEach { $0.resume() }
                session.finishTasksAndInvalidate()
                let events = try await delegate.log.wait {
                    $0.contains { if case .invalid = $0 { return true } else { return false } }
                }
                let completed = events.prefix { if case .invalid = $0 { return false } else { return true } }
                    .compactMap { event -> Int? in
                        if case .completed(let task, _) = event { return task } else { return nil }
                    }
                #expect(Set(completed) == Set(tasks.map(\.taskIdentifier)), "round \(round): \(events)")
            }
        }
    }

    @Test("invalidateAndCancel cancels running tasks, then didBecomeInvalid")
    func invalidateAndCancel() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            let tasks = (0..<3).map {
                session.dataTask(with: server.url("/bytes/1000000?trickle=1000&interval=10&seed=\($0)"))
            }
            tasks.forEach { $0.resume() }
            try await eventually { server.requests.count == 3 }
            session.invalidateAndCancel()
            let events = try await delegate.log.wait {
                $0.contains { if case .invalid = $0 { return true } else { return false } }
            }
            for task in tasks {
                #expect(
                    events.contains {
                        if case .completed(task.taskIdentifier, let error) = $0 {
                            return error?.code == .cancelled
                        } else {
                            return false
                        }
                    }, "delegate events: \(events)"
                )
            }
        }
    }

    @Test("a released session cancels its tasks and leaks no file descriptors")
    func releasedSession() async throws {
        try await withServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("released-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = testConfiguration()
            configuration.temporaryDirectory = directory
            let log = EventLog<CourierError.Code?>()
            do {
                let session = Session(configuration: configuration)
                for index in 0..<4 {
                    let task = session.dataTask(
                        with: server.url("/bytes/2000000?trickle=1000&interval=10&seed=\(index)")
                    ) { _, _, error in
                        log.append(CourierError.Code.of(error))
                    }
                    task.resume()
                }
                let download = session.downloadTask(with: server.url("/bytes/2000000?trickle=1000&interval=10")) {
                    _,
                    _,
                    error in
                    log.append(CourierError.Code.of(error))
                }
                download.resume()
                try await eventually { server.requests.count >= 5 }
                // Its connections (one, or one per loop over HTTP/2) and the download's file.
                #expect(openDescriptors(connectedToPort: server.port, orUnder: directory) >= 2)
            }
            let codes = try await log.wait { $0.count == 5 }
            #expect(codes.allSatisfy { $0 == .cancelled })
            // The released session's sockets to the server and its download's file, all closed.
            try await eventually(.seconds(10), "the session's descriptors closed") {
                openDescriptors(connectedToPort: server.port, orUnder: directory) == 0
            }
        }
    }
}

@Suite("Timeouts and limits", .blockingWaits, .timeLimit(.minutes(1)))
struct TimeoutTests {
    @Test("idle timeout on a stalled server")
    func idle() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.timeoutIntervalForRequest = 1
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let start = ContinuousClock.now
            await #expect {
                _ = try await session.data(from: server.url("/bytes/1000?stall=10000"))
            } throws: { error in
                (error as? CourierError)?.code == .timedOut
            }
            #expect(ContinuousClock.now - start < .seconds(6))
        }
    }

    @Test("a smaller request timeoutInterval wins")
    func requestTimeout() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/bytes/1000?stall=10000"))
            request.timeoutInterval = 1
            await #expect {
                _ = try await session.data(for: request)
            } throws: { error in
                (error as? CourierError)?.code == .timedOut
            }
        }
    }

    @Test("resource timeout bounds the whole task even while bytes trickle")
    func resource() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.timeoutIntervalForRequest = 5
            configuration.timeoutIntervalForResource = 1.5
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let start = ContinuousClock.now
            await #expect {
                _ = try await session.data(from: server.url("/bytes/100000?trickle=10&interval=50"))
            } throws: { error in
                (error as? CourierError)?.code == .timedOut
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(6))
        }
    }

    @Test("httpMaximumConnectionsPerHost caps connections")
    func perHostCap() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.httpMaximumConnectionsPerHost = 2
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        try await session.data(from: server.url("/bytes/1000?delay=50&seed=\(index)")).0.count
                    }
                }
                for try await count in group {
                    #expect(count == 1000)
                }
            }
            #expect(server.connectionCount <= 2)
        }
    }

    @Test("priority orders queued transfers")
    func priority() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.maximumConcurrentTransfers = 1
            configuration.engineLoopCount = 1
            let (session, delegate) = makeRecordingSession(configuration)
            defer { session.invalidateAndCancel() }
            // The blocker holds the only slot until the test cancels it, after both others are queued (one loop:
            // submits and the cancel go through the same command queue, in order).
            let blocker = session.dataTask(with: server.url("/bytes/1000000?trickle=1000&interval=10&seed=0"))
            blocker.resume()
            try await eventually { !server.requests.isEmpty }
            let low = session.dataTask(with: server.url("/bytes/10?seed=1"))
            low.priority = SessionTask.lowPriority
            let high = session.dataTask(with: server.url("/bytes/10?seed=2"))
            high.priority = SessionTask.highPriority
            #expect(high.priority == 1)
            low.resume()
            high.resume()
            blocker.cancel()
            for task in [blocker, low, high] {
                try await delegate.completion(of: task)
            }
            let order = server.requests.compactMap { $0.uri.split(separator: "seed=").last.map(String.init) }
            #expect(order == ["0", "2", "1"])
        }
    }

    @Test("maximumConcurrentTransfers runs one at a time")
    func sessionCap() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.maximumConcurrentTransfers = 1
            // One loop: each loop has its own connection cache, so a second loop would open a second connection.
            configuration.engineLoopCount = 1
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<6 {
                    group.addTask {
                        _ = try await session.data(from: server.url("/bytes/1000?delay=100&seed=\(index)"))
                    }
                }
                try await group.waitForAll()
            }
            #expect(ContinuousClock.now - start >= .milliseconds(600), "the transfers overlapped")
            #expect(server.connectionCount == 1)
        }
    }
}
