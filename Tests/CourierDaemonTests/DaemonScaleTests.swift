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

/// courierd at scale (docs/reliability.md): many tasks journaled in one background session (enqueue rate, courierd's
/// memory and journal, `courier tasks`, restart to serving), then many small transfers through it with its memory and
/// write-ahead log sampled as they go, which must level off. The test command runs 2,000 of each;
/// `scripts/daemon-scale.sh` 100,000 with a sample every 10 s (`COURIER_SCALE_TASKS`, `COURIER_SCALE_TRANSFERS`,
/// `COURIER_SCALE_SAMPLE`).
@Suite("courierd at scale", .blockingWaits, .serialized)
struct DaemonScaleTests {
    static func setting(_ name: String, _ value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { max($0, 10) } ?? value
    }

    /// courierd's resident memory, in bytes (`VmRSS`).
    static func residentBytes(of pid: pid_t) -> Int64 {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        let kilobytes = line?.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0
        return kilobytes * 1024
    }

    static func size(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    static func mebibytes(_ bytes: Int64) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }

    @Test("many tasks journaled in one session: enqueue rate, memory, journal, courier tasks, restart to serving")
    func queuedTasks() async throws {
        let count = Self.setting("COURIER_SCALE_TASKS", 2_000)
        let server = try await TestServer.start()
        // On battery, a discretionary session's tasks wait: they stay journaled, none runs.
        let daemon = Daemon(environment: ["COURIER_POWER": "battery"])
        defer { daemon.cleanup() }
        try daemon.start()
        let identifier = "com.example.podcasts.queued"
        let session = IPCMessage.OpenSession(request: 1, identifier: identifier, isDiscretionary: true)
        var (client, _) = try Client.opening(session, on: daemon)
        defer { client.close() }
        let baseline = Self.residentBytes(of: try #require(daemon.pid))

        let started = Date()
        for number in 1...count {
            let task = IPCMessage.BackgroundTask(
                identifier: number,
                kind: .download,
                request: TaskRequest(URLRequest(url: server.url("/bytes/1024?seed=\(number)")))
            )
            let answer = try client.request { .createTask(.init(request: $0, session: identifier, task: task)) }
            guard case .reply(let reply)? = answer, reply.result == .taskCreated else {
                Issue.record("task \(number) not created: \(String(describing: answer))")
                return
            }
        }
        let enqueueSeconds = Date().timeIntervalSince(started)
        let resident = Self.residentBytes(of: try #require(daemon.pid))
        let journal =
            Self.size(daemon.paths.journal) + Self.size(URL(fileURLWithPath: daemon.paths.journal.path + "-wal"))

        // `courier tasks`, as a user runs it.
        let listStarted = Date()
        let listed = try ChildProcess.run(
            try siblingExecutable("courier"),
            arguments: ["tasks", identifier],
            environment: daemon.clientEnvironment,
            timeout: .seconds(600)
        )
        let listSeconds = Date().timeIntervalSince(listStarted)
        #expect(listed.termination == .exited(0))
        let lines = String(decoding: listed.standardOutput, as: UTF8.self).split(separator: "\n").count
        #expect(lines >= count, "courier tasks printed \(lines) lines for \(count) tasks")

        // Restart: stopped, started, serving the whole list again.
        // The app's connection stays open (the session held): a restart ends it.
        #expect(daemon.stop() == .exited(0))
        let restartStarted = Date()
        try daemon.start()
        var looking = try Client.looking(at: daemon.socket)
        defer { looking.close() }
        let snapshots = try looking.tasks(of: identifier, timeout: 0) { _ in true }
        let restartSeconds = Date().timeIntervalSince(restartStarted)
        #expect(snapshots.count == count)
        let perTask = count > 0 ? (resident - baseline) / Int64(count) : 0
        print(
            "daemon scale: \(count) tasks journaled in \(String(format: "%.1f", enqueueSeconds)) s "
                + "(\(Int(Double(count) / enqueueSeconds))/s, each durable before its answer); courierd "
                + "\(Self.mebibytes(resident)) resident (\(perTask) bytes a task over \(Self.mebibytes(baseline))), "
                + "journal \(Self.mebibytes(journal)); courier tasks \(String(format: "%.2f", listSeconds)) s; "
                + "restart to serving the list \(String(format: "%.2f", restartSeconds)) s"
        )
        try await server.shutdown()
    }

    @Test("many small transfers through courierd: memory and the write-ahead log level off")
    func manyTransfers() async throws {
        let count = Self.setting("COURIER_SCALE_TRANSFERS", 2_000)
        // Four samples a second by default: a fast machine finishes 2,000 in a few seconds.
        let interval = ProcessInfo.processInfo.environment["COURIER_SCALE_SAMPLE"] == nil
            ? 0.25 : Double(Self.setting("COURIER_SCALE_SAMPLE", 1))
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let pid = try #require(daemon.pid)
        let identifier = "com.example.podcasts.many"
        var (client, _) = try Client.opening(.init(request: 1, identifier: identifier), on: daemon)
        defer { client.close() }
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(client.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        struct Sample {
            var seconds: Double
            var completed: Int
            var resident: Int64
            var wal: Int64
            var journal: Int64
        }
        var samples: [Sample] = []
        let wal = URL(fileURLWithPath: daemon.paths.journal.path + "-wal")
        let started = Date()
        var nextSample = started
        var created = 0
        var answered = 0
        var completed = 0
        var failed = 0
        // A few createTask requests in flight (the answers come in order, between event batches): never enough to
        // fill the socket, so that this side always gets back to reading what courierd sends.
        let window = 16
        let deadline = started.addingTimeInterval(Double(count) / 20 + 120)
        while completed < count, Date() < deadline {
            while created < count, created - answered < window {
                created += 1
                let task = IPCMessage.BackgroundTask(
                    identifier: created,
                    kind: .download,
                    request: TaskRequest(URLRequest(url: server.url("/bytes/1024?seed=\(created)")))
                )
                try client.send(.createTask(.init(request: UInt64(1_000 + created), session: identifier, task: task)))
            }
            if let message = try client.receive() {
                switch message {
                case .reply(let reply) where reply.result == .taskCreated:
                    answered += 1
                case .events(let batch):
                    for event in batch.events {
                        if case .complete(let completion) = event.event.payload {
                            completed += 1
                            failed += completion.error == nil ? 0 : 1
                        }
                    }
                    try client.send(.acknowledge(.init(session: identifier, through: batch.events.last?.sequence ?? 0)))
                case .failure(let failure):
                    Issue.record("refused: \(failure.error)")
                    return
                default:
                    break
                }
            }
            if Date() >= nextSample {
                nextSample = nextSample.addingTimeInterval(interval)
                samples.append(
                    Sample(
                        seconds: Date().timeIntervalSince(started),
                        completed: completed,
                        resident: Self.residentBytes(of: pid),
                        wal: Self.size(wal),
                        journal: Self.size(daemon.paths.journal)
                    )
                )
            }
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(completed == count, "\(completed) of \(count) completed")
        #expect(failed == 0, "\(failed) failed")
        // Once all are acknowledged, the journal holds no task and no event (only the capped history).
        timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(client.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let listed = try client.tasks(of: identifier, timeout: 5) { $0.isEmpty }
        #expect(listed.isEmpty, "\(listed.count) tasks left")
        for sample in samples {
            print(
                "daemon scale sample: \(String(format: "%6.1f", sample.seconds)) s, \(sample.completed) completed, "
                    + "RSS \(Self.mebibytes(sample.resident)), WAL \(Self.mebibytes(sample.wal)), "
                    + "journal \(Self.mebibytes(sample.journal))"
            )
        }
        // Levelling off: the second half's peak against the first half's, once warmed up (a quarter of the transfers
        // done: the engine's connections, SQLite's page cache and the allocator's arenas are made in the first ones,
        // and a short run would otherwise compare its steady state with its start).
        let warm = samples.filter { $0.completed >= count / 4 }
        let half = warm.count / 2
        let first = warm.prefix(max(half, 1))
        let second = warm.suffix(max(warm.count - half, 1))
        let residentGrowth =
            Double(second.map(\.resident).max() ?? 0) / Double(max(first.map(\.resident).max() ?? 1, 1))
        let walPeak = samples.map(\.wal).max() ?? 0
        print(
            "daemon scale: \(completed) transfers of 1 KiB in \(String(format: "%.1f", seconds)) s "
                + "(\(Int(Double(completed) / seconds))/s); peak RSS second half / first half "
                + "\(String(format: "%.2f", residentGrowth)); WAL peak \(Self.mebibytes(walPeak)); "
                + "\(samples.count) samples every \(interval) s, \(warm.count) once warmed up"
        )
        if warm.count >= 8 {
            #expect(residentGrowth < 1.25, "courierd's memory grows with the tasks finished")
        }
        // SQLite checkpoints the log at 1,000 pages (4 MiB); a log far past that is not being checkpointed.
        #expect(walPeak < 32 << 20, "the write-ahead log reached \(Self.mebibytes(walPeak))")
        try await server.shutdown()
    }
}
