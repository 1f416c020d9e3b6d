import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every test runs in every pass; their memory bounds (the process's RSS) are checked where the process runs this suite
/// alone (``measuresWholeProcess``: scripts/test.sh runs it so after the whole suite), one test at a time.
@Suite("Stress", .serialized, .timeLimit(.minutes(5)))
struct StressTests {
    @Test("10,000 tasks with 1,000 in flight: every byte checked, memory bounded")
    func tenThousand() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.httpMaximumConnectionsPerHost = 32
            configuration.timeoutIntervalForRequest = 60
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let total = 10_000
            let inFlight = 1_000
            // Warm up, then measure.
            _ = try await session.data(from: server.url("/bytes/10"))
            let before = residentMemory()
            var peak = before
            var failures = 0
            var checked = 0
            try await withThrowingTaskGroup(of: Bool.self) { group in
                var next = 0
                func add() {
                    let index = next
                    next += 1
                    let length = 1 + (index * 7919) % 8192
                    group.addTask {
                        if index % 2 == 0 {
                            let (data, _) = try await session.data(from: server.url("/bytes/\(length)?seed=\(index)"))
                            return data == TestServer.bytes(count: length, seed: index)
                        }
                        let (file, _) = try await session.download(from: server.url("/bytes/\(length)?seed=\(index)"))
                        defer { try? FileManager.default.removeItem(at: file) }
                        return try Data(contentsOf: file) == TestServer.bytes(count: length, seed: index)
                    }
                }
                while next < inFlight {
                    add()
                }
                while let ok = try await group.next() {
                    checked += 1
                    if !ok {
                        failures += 1
                    }
                    if next < total {
                        add()
                    }
                    if checked % 1000 == 0 {
                        peak = max(peak, residentMemory())
                    }
                }
            }
            let after = residentMemory()
            #expect(checked == total)
            #expect(failures == 0)
            let growth = max(peak, after) - before
            if measuresWholeProcess {
                #expect(
                    growth < (200 << 20) * memoryBoundFactor,
                    "RSS grew by \(growth >> 20) MiB (before \(before >> 20) MiB)"
                )
            }
            #expect(session.allTasks.isEmpty)
        }
    }

    /// The microbenchmark `DeliverEventBatches256KiB`'s workload, where a heap corruption was once reported on the
    /// engine's loop thread: many 256 KiB bodies, one after another on one kept-alive connection, handed to a data
    /// delegate as DATA batches. `COURIER_STRESS_REPEAT` raises the count (for runs under the sanitizers).
    @Test("256 KiB bodies one after another on a kept-alive connection, each handed to a data delegate whole")
    func largeBodiesToDelegate() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.httpMaximumConnectionsPerHost = 1
            let delegate = BodyCountingDelegate()
            let session = Session(configuration: configuration, delegate: delegate)
            defer { session.invalidateAndCancel() }
            let count = ProcessInfo.processInfo.environment["COURIER_STRESS_REPEAT"].flatMap { Int($0) } ?? 200
            for index in 0..<count {
                let task = session.dataTask(with: server.url("/bytes/262144?seed=\(index % 7)"))
                let received = try await delegate.run(task)
                #expect(received == TestServer.bytes(count: 262_144, seed: index % 7), "request \(index)")
                if received.count != 262_144 {
                    break
                }
            }
        }
    }

    @Test("100,000 created tasks are cheap: nothing runs until resume")
    func cheapTasks() async throws {
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        let before = residentMemory()
        let url = URL(string: "http://127.0.0.1:1/never")!
        var tasks: [DataTask] = []
        tasks.reserveCapacity(100_000)
        for _ in 0..<100_000 {
            tasks.append(session.dataTask(with: url))
        }
        #expect(tasks.allSatisfy { $0.state == .suspended })
        #expect(session.allTasks.isEmpty)
        let growth = residentMemory() - before
        if measuresWholeProcess {
            #expect(growth < (300 << 20) * memoryBoundFactor, "100k idle tasks took \(growth >> 20) MiB")
        }
    }
}

/// A data delegate that gathers each task's body and lets a test await its completion.
private final class BodyCountingDelegate: SessionDataDelegate {
    private let state = LockedValue<(bodies: [Int: Data], waiting: [Int: CheckedContinuation<Data, any Error>])>(
        ([:], [:])
    )

    /// Resumes `task` and returns its body once `didCompleteWithError` was called for it.
    func run(_ task: DataTask) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.waiting[task.taskIdentifier] = continuation }
            task.resume()
        }
    }

    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        state.withLock { $0.bodies[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, body) = state.withLock {
            ($0.waiting.removeValue(forKey: task.taskIdentifier), $0.bodies.removeValue(forKey: task.taskIdentifier))
        }
        if let error {
            continuation?.resume(throwing: error)
        } else {
            continuation?.resume(returning: body ?? Data())
        }
    }
}
