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

/// The kill harness: courierd SIGKILLed at random instants while it runs many downloads (small ones, large trickled
/// ones, some through a server that cuts the body so they are retried), restarted each time, the session reopened;
/// at the end every task has completed exactly once without error, every file is what the server serves, and every
/// journaled event reached the app once its duplicates (replays of what was not acknowledged) are dropped.
///
/// Scale from the environment: `COURIER_KILL_HARNESS_TRANSFERS` (default 40) and `COURIER_KILL_HARNESS_KILLS`
/// (default 8); `COURIER_KILL_HARNESS_SEED` replays a plan (sizes, cuts, pauses; the timing of the machine is not
/// replayed); `COURIER_KILL_HARNESS_VERBOSE` prints each task's HTTP exchanges and every file left in the state
/// directory; `COURIER_KILL_HARNESS_KEEP` keeps courierd's directories. `scripts/kill-harness.sh` runs it at full
/// scale (1,000 transfers, 200 kills).
///
/// Files left in the state directory once everything is acknowledged (handed-over downloads not deleted, orphaned
/// partial files) are counted in the `kill harness detail:` line, not failed on: they waste disk, they lose nothing.
///
/// Bytes re-fetched per kill are measured on the wire: the daemon downloads through a counting TCP proxy in front of
/// the test server (the server records requests, not the body bytes it sent). For each task, the exchanges (request
/// with its `Range` start, response body bytes forwarded to the daemon) are put in order; what one exchange brought
/// beyond the offset the next one starts from was fetched twice, and is charged to the kill between the two. The
/// journal's view (last progress total before a `.resumed(offset:)` minus that offset) is printed beside it.
@Suite("courierd kill harness", .blockingWaits, .serialized)
struct KillHarnessTests {
    static let identifier = "com.example.podcasts.killharness"
    static let session = IPCMessage.OpenSession(request: 1, identifier: identifier)

    /// One planned download: `/bytes/count?seed=identifier`, trickled when large, cut after `cut` body bytes of each
    /// response when set (at most three exchanges, so the retries' doubling delay stays under a second).
    struct Transfer: Sendable {
        var identifier: Int
        var count: Int
        var large: Bool
        var cut: Int?

        var path: String {
            var path = "/bytes/\(count)?seed=\(identifier)"
            if large {
                // 64 KiB every 40 ms: about 1.6 MB/s, so a large download lasts one to five seconds.
                path += "&trickle=65536&interval=40"
            }
            if let cut {
                path += "&cut=\(cut)"
            }
            return path
        }
    }

    static func setting(_ name: String, default value: Int) -> Int {
        guard let text = ProcessInfo.processInfo.environment[name], let number = Int(text), number >= 0 else {
            return value
        }
        return number
    }

    /// A fifth of the transfers large (1–8 MiB, trickled), the rest small (1–64 KiB); a tenth (at least one) cut.
    static func plan(_ count: Int, using random: inout SplitMix64) -> [Transfer] {
        let identifiers = Array(1...max(count, 1))
        let large = Set(identifiers.shuffled(using: &random).prefix(max(1, count / 5)))
        let cut = Set(identifiers.shuffled(using: &random).prefix(max(1, count / 10)))
        return identifiers.map { identifier in
            let isLarge = large.contains(identifier)
            let size = isLarge
                ? Int.random(in: (1 << 20)...(8 << 20), using: &random)
                : Int.random(in: 1024...(64 << 10), using: &random)
            let cutAt = cut.contains(identifier)
                ? Int.random(in: (size / 3 + 1)...(size * 9 / 10), using: &random) : nil
            return Transfer(identifier: identifier, count: size, large: isLarge, cut: cutAt)
        }
    }

    @Test("courierd SIGKILLed at random during many transfers: none lost, corrupt, completed twice or undelivered")
    func killHarness() async throws {
        let transferCount = Self.setting("COURIER_KILL_HARNESS_TRANSFERS", default: 40)
        let killCount = Self.setting("COURIER_KILL_HARNESS_KILLS", default: 8)
        let seed = ProcessInfo.processInfo.environment["COURIER_KILL_HARNESS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        var random = SplitMix64(seed: seed)  // IPCCorpusTests.swift
        let plan = Self.plan(transferCount, using: &random)
        print(
            "kill harness plan: seed \(seed), \(plan.count) transfers (\(plan.filter(\.large).count) large, "
                + "\(plan.filter { $0.cut != nil }.count) cut), \(killCount) kills"
        )

        let server = try await TestServer.start()
        let proxy = try CountingProxy(upstreamPort: server.port)
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        let keep = ProcessInfo.processInfo.environment["COURIER_KILL_HARNESS_KEEP"] != nil
        let verbose = ProcessInfo.processInfo.environment["COURIER_KILL_HARNESS_VERBOSE"] != nil
        defer {
            if keep {
                _ = daemon.stop()
                print("kill harness kept: courierd's directories at \(daemon.root.path)")
            } else {
                daemon.cleanup()
            }
            proxy.stop()
        }
        let started = Date()
        try daemon.start()
        var client = try Self.open(on: daemon)
        let ledger = KillHarnessLedger(plan)
        for transfer in plan {
            let url = URL(string: "http://127.0.0.1:\(proxy.port)\(transfer.path)")!
            let task = IPCMessage.BackgroundTask(
                identifier: transfer.identifier,
                kind: .download,
                request: TaskRequest(URLRequest(url: url)),
                taskDescription: "kill-harness-\(transfer.identifier)"
            )
            let answer = try client.request { .createTask(.init(request: $0, session: Self.identifier, task: task)) }
            guard case .reply(let reply)? = answer, reply.result == .taskCreated else {
                Issue.record("task \(transfer.identifier) not created: \(String(describing: answer))")
                return
            }
        }
        Self.setReadTimeout(client, milliseconds: 20)

        // The kills: each after a random pause in which events are collected and acknowledged.
        var killTimes: [Date] = []
        for _ in 0..<killCount {
            let pause = Double(Int.random(in: 50...600, using: &random)) / 1000
            try Self.collect(&client, into: ledger, until: Date().addingTimeInterval(pause), epoch: killTimes.count)
            killTimes.append(Date())
            daemon.kill()
            client.close()
            try daemon.start()
            client = try Self.open(on: daemon)
            Self.setReadTimeout(client, milliseconds: 20)
            // An acknowledgement written just before the kill may never have been read: the replay is acknowledged
            // again, as an app does (each batch, duplicates included).
            ledger.acknowledged = 0
        }
        let killsDone = Date()

        // No more kills: collect until every task has completed (or nothing new arrives for a minute).
        var lastNews = Date()
        while !ledger.everyTaskCompleted {
            let before = ledger.uniqueEvents
            try Self.collect(&client, into: ledger, until: Date().addingTimeInterval(1), epoch: killTimes.count)
            if ledger.uniqueEvents != before {
                lastNews = Date()
            } else if Date().timeIntervalSince(lastNews) > 60 {
                Issue.record("nothing new from courierd for 60 s; not completed: \(ledger.incomplete.prefix(20))")
                break
            }
        }
        try Self.acknowledge(&client, ledger: ledger, force: true)
        Self.setReadTimeout(client, milliseconds: 20_000)
        // Answered after the acknowledgement: every task has told all, so the journal has none left.
        let listed = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
        guard case .reply(let listReply)? = listed, case .tasks(let snapshots) = listReply.result else {
            Issue.record("no task list: \(String(describing: listed))")
            return
        }
        #expect(snapshots.isEmpty, "tasks left in the journal: \(snapshots.prefix(10).map(\.identifier))")
        client.close()
        #expect(daemon.stop() == .exited(0))
        let finished = Date()

        // The verdict.
        let lost = ledger.incomplete
        let failed = ledger.failed
        let corrupt = ledger.corrupt
        let duplicates = ledger.duplicateCompletions
        let gaps = ledger.gaps
        #expect(lost.isEmpty, "tasks lost (no completion): \(lost.prefix(20))")
        #expect(failed.isEmpty, "tasks that completed with an error: \(failed.prefix(20))")
        #expect(corrupt.isEmpty, "corrupt or missing files: \(corrupt.prefix(20))")
        #expect(duplicates.isEmpty, "tasks completed more than once: \(duplicates.prefix(20))")
        #expect(gaps.isEmpty, "sequence numbers never delivered: \(gaps.prefix(20))")
        #expect(ledger.outOfOrder.isEmpty, "delivered out of sequence order: \(ledger.outOfOrder.prefix(20))")
        #expect(ledger.afterCompletion.isEmpty, "events after a completion: \(ledger.afterCompletion.prefix(20))")
        #expect(ledger.replayMismatches.isEmpty, "one sequence, two events: \(ledger.replayMismatches.prefix(10))")
        #expect(ledger.unknownTasks.isEmpty, "events of tasks never created: \(ledger.unknownTasks.prefix(10))")

        // Bytes fetched twice, from the proxy's exchanges.
        let wire = Self.refetched(proxy.exchanges, plan: plan, kills: killTimes)
        #expect(wire.anomalies.isEmpty, "exchanges that skipped bytes: \(wire.anomalies.prefix(10))")
        let journalView = Self.journalRegressions(ledger.resumes, kills: killTimes.count)
        if verbose {
            Self.printExchanges(proxy.exchanges, plan: plan, kills: killTimes, since: started)
            let kills = killTimes.map { String(format: "%.3f", $0.timeIntervalSince(started)) }
            print("kills at: \(kills.joined(separator: " "))")
        }
        let leftovers = Self.leftovers(
            of: daemon,
            plan: plan,
            ledger: ledger,
            kills: killTimes,
            since: started,
            printing: verbose
        )
        try await server.shutdown()

        print(
            "kill harness: \(plan.count) transfers, \(killTimes.count) kills, \(lost.count) lost, "
                + "\(corrupt.count) corrupt, \(duplicates.count) duplicate completions, "
                + "median re-fetched per kill \(Self.median(wire.perKill)) bytes"
        )
        let mean = wire.perKill.isEmpty ? 0 : wire.perKill.reduce(0, +) / Int64(wire.perKill.count)
        print(
            "kill harness detail: seed \(seed); \(ledger.uniqueEvents) events (\(ledger.replayed) replayed duplicates "
                + "dropped), \(failed.count) failed, \(gaps.count) gaps, \(ledger.outOfOrder.count) out of order; "
                + "re-fetched on the wire: total \(wire.total) bytes (body bytes sent \(wire.bodyBytes) - file bytes "
                + "\(wire.fileBytes)), per kill mean \(mean) p90 \(Self.percentile(wire.perKill, 0.9)) "
                + "max \(wire.perKill.max() ?? 0), \(wire.perKill.filter { $0 > 0 }.count) kills re-fetched something, "
                + "\(wire.unattributed) bytes not after a kill, \(wire.exchanges) exchanges; downloads with bytes "
                + "interrupted by a kill: \(wire.resumedWithRange) went on with Range, \(wire.restartedFromZero) "
                + "started again from byte 0; journal view (last progress total - resumed offset): median per kill "
                + "\(Self.median(journalView)) max \(journalView.max() ?? 0); left in the state directory after the "
                + "last acknowledgement: \(leftovers.joined(separator: ", ")); kills took "
                + "\(Int(killsDone.timeIntervalSince(started))) s, all \(Int(finished.timeIntervalSince(started))) s"
        )
    }

    /// What is left under courierd's state directory once the journal is empty (handed-over files not deleted,
    /// partial files), as `directory count`; with `printing`, each file and what the ledger knows of it.
    static func leftovers(
        of daemon: Daemon,
        plan: [Transfer],
        ledger: KillHarnessLedger,
        kills: [Date],
        since start: Date,
        printing: Bool
    ) -> [String] {
        ["downloads", "partial", "staging"].map { directory in
            let folder = daemon.state.appendingPathComponent(directory)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            guard printing else {
                return "\(directory) \(names.count)"
            }
            for name in names.sorted() {
                let file = folder.appendingPathComponent(name)
                var line = describeLeftover(file, plan: plan, since: start)
                if let handedOver = ledger.handedOver[file.path] {
                    line += String(
                        format: "; handed over as event %llu at %.3fs",
                        handedOver.sequence,
                        handedOver.at.timeIntervalSince(start)
                    )
                    if let acknowledged = ledger.acknowledgements.first(where: { $0.through >= handedOver.sequence }) {
                        line += String(
                            format: ", acknowledged (through %llu) at %.3fs",
                            acknowledged.through,
                            acknowledged.at.timeIntervalSince(start)
                        )
                        if let kill = kills.first(where: { $0 >= acknowledged.at }) {
                            let delay = kill.timeIntervalSince(acknowledged.at) * 1000
                            line += String(format: ", next kill %.0f ms later", delay)
                        }
                    }
                } else if directory == "downloads" {
                    line += "; never handed over"
                }
                print("left in \(directory): \(line)")
            }
            return "\(directory) \(names.count)"
        }
    }

    // MARK: The conversation

    /// Connects and opens the session; tries again (a daemon still restoring may not answer at once).
    static func open(on daemon: Daemon) throws -> Client {
        var last: IPCMessage?
        for _ in 0..<3 {
            let (client, answer) = try Client.opening(session, on: daemon)
            if case .reply(let reply)? = answer, case .sessionOpened = reply.result {
                return client
            }
            last = answer
            client.close()
            usleep(200_000)
        }
        Issue.record("the session did not open: \(String(describing: last))")
        throw POSIXError(.EIO)
    }

    /// How long a read waits: short while collecting (a read that times out ends a batch wait), long for requests.
    static func setReadTimeout(_ client: Client, milliseconds: Int) {
        var timeout = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(client.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Records the batches that arrive until `deadline`, acknowledging as it goes.
    static func collect(
        _ client: inout Client,
        into ledger: KillHarnessLedger,
        until deadline: Date,
        epoch: Int
    ) throws {
        while Date() < deadline {
            if let batch = try client.nextBatch() {
                ledger.record(batch.events, epoch: epoch)
                try acknowledge(&client, ledger: ledger, force: false)
            } else if UnixSocket.peerHungUp(client.descriptor) {
                Issue.record("courierd closed the connection without being killed")
                throw POSIXError(.ECONNRESET)
            }
        }
    }

    /// Acknowledges through the highest sequence number below which every event was recorded (and every handed-over
    /// file checked): at most every 50 ms unless `force`.
    static func acknowledge(_ client: inout Client, ledger: KillHarnessLedger, force: Bool) throws {
        guard ledger.contiguous > ledger.acknowledged,
            force || Date().timeIntervalSince(ledger.lastAcknowledgement) >= 0.05
        else {
            return
        }
        try client.send(.acknowledge(.init(session: identifier, through: ledger.contiguous)))
        ledger.acknowledged = ledger.contiguous
        ledger.lastAcknowledgement = Date()
        ledger.acknowledgements.append((ledger.contiguous, ledger.lastAcknowledgement))
    }

    // MARK: Figures

    struct WireFigures {
        /// Bytes fetched twice, charged to each kill in order.
        var perKill: [Int64]
        /// Fetched twice with no kill in between (a cut and its retry should never do it).
        var unattributed: Int64 = 0
        var bodyBytes: Int64 = 0
        var fileBytes: Int64 = 0
        var exchanges = 0
        /// After a kill, a download that had bytes: asked for the rest with `Range`, or started again from byte 0.
        var resumedWithRange = 0
        var restartedFromZero = 0
        /// An exchange starting beyond what the ones before it brought.
        var anomalies: [String] = []
        var total: Int64 { bodyBytes - fileBytes }
    }

    static func refetched(_ exchanges: [CountingProxy.Exchange], plan: [Transfer], kills: [Date]) -> WireFigures {
        var figures = WireFigures(perKill: Array(repeating: 0, count: kills.count))
        figures.fileBytes = plan.reduce(0) { $0 + Int64($1.count) }
        let byTask = Dictionary(grouping: exchanges.filter { $0.seed != nil }) { $0.seed! }
        for (task, list) in byTask {
            let ordered = list.sorted { $0.started < $1.started }
            figures.exchanges += ordered.count
            figures.bodyBytes += ordered.reduce(0) { $0 + $1.bodyBytes }
            for (current, next) in zip(ordered, ordered.dropFirst()) {
                let twice = current.rangeStart + current.bodyBytes - next.rangeStart
                if twice < 0 {
                    figures.anomalies.append(
                        "task \(task): \(current.rangeStart)+\(current.bodyBytes) then bytes=\(next.rangeStart)-"
                    )
                    continue
                }
                if let kill = kills.firstIndex(where: { $0 > current.started && $0 <= next.started }) {
                    figures.perKill[kill] += twice
                    if current.rangeStart + current.bodyBytes > 0 {
                        if next.rangeStart > 0 {
                            figures.resumedWithRange += 1
                        } else {
                            figures.restartedFromZero += 1
                        }
                    }
                } else {
                    figures.unattributed += twice
                }
            }
        }
        return figures
    }

    /// Per kill, how far the journaled progress went back: the last progress total before each `.resumed` minus
    /// its offset (a resume first seen after kill k is charged to kill k).
    static func journalRegressions(_ resumes: [(epoch: Int, regression: Int64)], kills: Int) -> [Int64] {
        var perKill = Array(repeating: Int64(0), count: kills)
        for resume in resumes where resume.epoch > 0 && resume.epoch <= kills {
            perKill[resume.epoch - 1] += max(0, resume.regression)
        }
        return perKill
    }

    /// Each task's exchanges (start time, `Range` start, body bytes forwarded, status) and the kills between them.
    static func printExchanges(
        _ exchanges: [CountingProxy.Exchange],
        plan: [Transfer],
        kills: [Date],
        since start: Date
    ) {
        let byTask = Dictionary(grouping: exchanges.filter { $0.seed != nil }) { $0.seed! }
        for transfer in plan {
            let ordered = (byTask[transfer.identifier] ?? []).sorted { $0.started < $1.started }
            let cut = transfer.cut.map { ", cut \($0)" } ?? ""
            var line = "task \(transfer.identifier) (\(transfer.count) bytes\(cut)):"
            var previous: Date?
            for exchange in ordered {
                let between = kills.indices.filter {
                    kills[$0] <= exchange.started && kills[$0] > (previous ?? .distantPast)
                }
                if !between.isEmpty {
                    line += " [kill \(between.map { "\($0 + 1)" }.joined(separator: ","))]"
                }
                line += String(
                    format: " %.3fs %lld+%lld %@%@",
                    exchange.started.timeIntervalSince(start),
                    exchange.rangeStart,
                    exchange.bodyBytes,
                    exchange.status.map { "\($0)" } ?? "-",
                    exchange.complete ? "" : "!"
                )
                previous = exchange.started
            }
            print(line)
        }
    }

    /// A file left in the state directory: its size, when it was last written, and the task whose content it is.
    static func describeLeftover(_ file: URL, plan: [Transfer], since start: Date) -> String {
        let attributes = (try? FileManager.default.attributesOfItem(atPath: file.path)) ?? [:]
        let size = (attributes[.size] as? NSNumber)?.intValue ?? -1
        let modified = (attributes[.modificationDate] as? Date).map {
            String(format: "%.3fs", $0.timeIntervalSince(start))
        } ?? "?"
        var owner = "no task's content"
        if let data = FileManager.default.contents(atPath: file.path) {
            let head = data.prefix(64)
            for transfer in plan where transfer.count >= data.count {
                guard TestServer.bytes(count: head.count, seed: transfer.identifier) == head else {
                    continue
                }
                if TestServer.bytes(count: data.count, seed: transfer.identifier) == data {
                    owner = data.count == transfer.count
                        ? "task \(transfer.identifier), whole"
                        : "task \(transfer.identifier), first \(data.count) of \(transfer.count)"
                    break
                }
            }
        }
        return "\(file.lastPathComponent) \(size) bytes, written at \(modified): \(owner)"
    }

    static func median(_ values: [Int64]) -> Int64 {
        guard !values.isEmpty else {
            return 0
        }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func percentile(_ values: [Int64], _ fraction: Double) -> Int64 {
        guard !values.isEmpty else {
            return 0
        }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }
}

/// What the app heard, deduplicated by sequence number, and what it found in the handed-over files.
final class KillHarnessLedger {
    struct TaskRecord {
        /// Sequence numbers in the order first delivered.
        var sequences: [UInt64] = []
        var completions: [(sequence: UInt64, error: CourierError?)] = []
        var finishedFiles: [UInt64] = []
        var lastTotal: Int64 = 0
    }

    let plan: [Int: KillHarnessTests.Transfer]
    private(set) var tasks: [Int: TaskRecord] = [:]
    private var delivered: [UInt64: IPCMessage.SequencedEvent] = [:]
    private var highestFirst: UInt64 = 0
    /// Every sequence number up to this one was delivered.
    private(set) var contiguous: UInt64 = 0
    var acknowledged: UInt64 = 0
    var lastAcknowledgement = Date.distantPast
    /// Every acknowledgement sent: through which sequence number, when.
    var acknowledgements: [(through: UInt64, at: Date)] = []
    /// The files handed over, by path: in which event, first delivered when.
    private(set) var handedOver: [String: (sequence: UInt64, at: Date)] = [:]
    private(set) var replayed = 0
    private(set) var outOfOrder: [String] = []
    private(set) var afterCompletion: [String] = []
    private(set) var replayMismatches: [UInt64] = []
    private(set) var unknownTasks: [Int] = []
    private(set) var corrupt: [String] = []
    /// For each `.resumed`: the kills done when it was first delivered, and the last reported total minus its offset.
    private(set) var resumes: [(epoch: Int, regression: Int64)] = []

    init(_ plan: [KillHarnessTests.Transfer]) {
        self.plan = Dictionary(uniqueKeysWithValues: plan.map { ($0.identifier, $0) })
    }

    var uniqueEvents: Int { delivered.count }

    var everyTaskCompleted: Bool {
        plan.keys.allSatisfy { tasks[$0]?.completions.isEmpty == false }
    }

    var incomplete: [Int] {
        plan.keys.filter { tasks[$0]?.completions.isEmpty != false }.sorted()
    }

    var failed: [String] {
        tasks.keys.sorted().compactMap { task in
            tasks[task]!.completions.first { $0.error != nil }.map { "task \(task): \($0.error!)" }
        }
    }

    var duplicateCompletions: [String] {
        tasks.keys.sorted().compactMap { task in
            let completions = tasks[task]!.completions
            let files = tasks[task]!.finishedFiles
            guard completions.count > 1 || files.count > 1 else {
                return nil
            }
            return "task \(task): completions \(completions.map(\.sequence)), downloaded \(files)"
        }
    }

    var gaps: [UInt64] {
        guard let highest = delivered.keys.max(), highest > contiguous else {
            return []
        }
        return (contiguous + 1...highest).filter { delivered[$0] == nil }
    }

    func record(_ events: [IPCMessage.SequencedEvent], epoch: Int) {
        for event in events {
            if let earlier = delivered[event.sequence] {
                replayed += 1
                if earlier != event {
                    replayMismatches.append(event.sequence)
                }
                continue
            }
            delivered[event.sequence] = event
            while delivered[contiguous + 1] != nil {
                contiguous += 1
            }
            if event.sequence < highestFirst {
                outOfOrder.append("\(event.sequence) after \(highestFirst)")
            }
            highestFirst = max(highestFirst, event.sequence)
            guard let transfer = plan[event.task] else {
                unknownTasks.append(event.task)
                continue
            }
            var record = tasks[event.task] ?? TaskRecord()
            if let last = record.sequences.last, event.sequence < last {
                outOfOrder.append("task \(event.task): \(event.sequence) after \(last)")
            }
            if let completion = record.completions.last {
                afterCompletion.append("task \(event.task): \(event.sequence) after completion \(completion.sequence)")
            }
            record.sequences.append(event.sequence)
            switch event.event.payload {
            case .progress:
                record.lastTotal = event.event.progress.received
            case .resumed(let offset, _):
                resumes.append((epoch, record.lastTotal - offset))
            case .downloaded(let path):
                handedOver[path] = (event.sequence, Date())
                record.finishedFiles.append(event.sequence)
                // Checked before the acknowledgement that deletes it.
                if let problem = KillHarnessLedger.check(path, against: transfer) {
                    corrupt.append("task \(event.task): \(problem)")
                }
            case .complete(let completion):
                let error = completion.error
                record.completions.append((event.sequence, error))
                if error == nil, record.finishedFiles.isEmpty {
                    corrupt.append("task \(event.task): completed without a file")
                }
            default:
                break
            }
            tasks[event.task] = record
        }
    }

    static func check(_ path: String, against transfer: KillHarnessTests.Transfer) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else {
            return "no file at \(path)"
        }
        let expected = TestServer.bytes(count: transfer.count, seed: transfer.identifier)
        if data == expected {
            return nil
        }
        let firstDifference = zip(data, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        return "\(path): \(data.count) bytes, expected \(expected.count), first difference at "
            + "\(firstDifference ?? min(data.count, expected.count))"
    }
}

/// A TCP proxy on 127.0.0.1 in front of the test server that counts, per HTTP/1.1 exchange, the response body bytes it
/// forwarded to the client, with the request's target and `Range` start. One thread per connection.
///
/// `@unchecked Sendable`: `port`, `upstreamPort` and `listener` are constants; the rest is under `lock`.
final class CountingProxy: @unchecked Sendable {
    struct Exchange: Sendable {
        var target: String
        var rangeStart: Int64
        var started: Date
        var status: Int?
        var bodyBytes: Int64 = 0
        var complete = false

        /// The `seed` of a `/bytes` target: the task's identifier in the harness.
        var seed: Int? {
            guard target.hasPrefix("/bytes/"), let query = target.split(separator: "?", maxSplits: 1).last else {
                return nil
            }
            for pair in query.split(separator: "&") where pair.hasPrefix("seed=") {
                return Int(pair.dropFirst(5))
            }
            return nil
        }
    }

    let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private let lock = NSLock()
    private var log: [Exchange] = []
    private var stopping = false

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        (listener, port) = try TCPSocket.listen(on: "127.0.0.1", backlog: 512)
        Thread.detachNewThread { [self] in
            self.acceptConnections()
        }
    }

    /// Every exchange so far, in the order the requests arrived.
    var exchanges: [Exchange] {
        lock.withLock { log }
    }

    /// Stops accepting; open relays end within half a second.
    func stop() {
        lock.withLock { stopping = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private var isStopping: Bool {
        lock.withLock { stopping }
    }

    private func acceptConnections() {
        TCPSocket.acceptConnections(on: listener) { client in
            if isStopping {
                close(client)
                return false
            }
            Thread.detachNewThread { [self] in
                self.relay(client)
            }
            return true
        }
    }

    private func connectUpstream() -> Int32 {
        TCPSocket.connect(to: "127.0.0.1", port: upstreamPort)
    }

    /// Sends `count` bytes of `buffer`; returns how many went (fewer when the peer is gone).
    private static func send(_ buffer: UnsafeRawBufferPointer, count: Int, to descriptor: Int32) -> Int {
        var offset = 0
        while offset < count {
            let written = Glibc.send(descriptor, buffer.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
            if written < 0 && errno == EINTR {
                continue
            }
            guard written > 0 else {
                break
            }
            offset += written
        }
        return offset
    }

    private func relay(_ client: Int32) {
        let upstream = connectUpstream()
        guard upstream >= 0 else {
            close(client)
            return
        }
        defer {
            close(client)
            close(upstream)
        }
        var requests = HTTPHeadReader()
        var responses = HTTPHeadReader()
        /// Exchanges of this connection whose response is not over yet, first the one being answered.
        var pending: [Int] = []
        /// Body bytes still to come of the current response; nil while reading a head, -1 until the close.
        var bodyLeft: Int64?
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var descriptors = [
            pollfd(fd: client, events: Int16(POLLIN), revents: 0),
            pollfd(fd: upstream, events: Int16(POLLIN), revents: 0),
        ]
        while !isStopping {
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            let ready = poll(&descriptors, 2, 500)
            if ready < 0 && errno == EINTR {
                continue
            }
            if ready < 0 {
                return
            }
            if descriptors[0].revents != 0 {
                let count = recv(client, &buffer, buffer.count, 0)
                if count < 0 && errno == EINTR {
                    continue
                }
                if count <= 0 {
                    return
                }
                // Requests are noted before they go on, so an exchange starts before its answer.
                for head in requests.feed(buffer[0..<count]) {
                    let exchange = CountingProxy.exchange(from: head)
                    lock.withLock {
                        log.append(exchange)
                        pending.append(log.count - 1)
                    }
                }
                let sent = buffer.withUnsafeBytes { CountingProxy.send($0, count: count, to: upstream) }
                if sent < count {
                    return
                }
            }
            if descriptors[1].revents != 0 {
                let count = recv(upstream, &buffer, buffer.count, 0)
                if count < 0 && errno == EINTR {
                    continue
                }
                if count <= 0 {
                    return
                }
                let sent = buffer.withUnsafeBytes { CountingProxy.send($0, count: count, to: client) }
                // Only what reached the client counts.
                var rest = buffer[0..<sent]
                while !rest.isEmpty {
                    if let left = bodyLeft {
                        let take = left < 0 ? rest.count : Int(min(Int64(rest.count), left))
                        lock.withLock {
                            if let index = pending.first {
                                log[index].bodyBytes += Int64(take)
                            }
                        }
                        rest = rest.dropFirst(take)
                        if left >= 0 {
                            bodyLeft = left - Int64(take)
                            if bodyLeft == 0 {
                                bodyLeft = nil
                                lock.withLock {
                                    if let index = pending.first {
                                        log[index].complete = true
                                    }
                                }
                                if !pending.isEmpty {
                                    pending.removeFirst()
                                }
                            }
                        }
                        continue
                    }
                    let (head, used) = responses.feedOne(rest)
                    rest = rest.dropFirst(used)
                    guard let head else {
                        break
                    }
                    let (status, length) = CountingProxy.response(from: head)
                    lock.withLock {
                        if let index = pending.first {
                            log[index].status = status
                        }
                    }
                    if length == 0 {
                        lock.withLock {
                            if let index = pending.first {
                                log[index].complete = true
                            }
                        }
                        if !pending.isEmpty {
                            pending.removeFirst()
                        }
                    } else {
                        bodyLeft = length ?? -1
                    }
                }
                if sent < count {
                    return
                }
            }
        }
    }

    private static func headerValue(_ name: String, in lines: [Substring]) -> String? {
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else {
                continue
            }
            if line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == name {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    private static func lines(_ head: [UInt8]) -> [Substring] {
        String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: true)
    }

    private static func exchange(from head: [UInt8]) -> Exchange {
        let lines = lines(head)
        let parts = lines.first?.split(separator: " ") ?? []
        let target = parts.count > 1 ? String(parts[1]) : ""
        var start: Int64 = 0
        if let range = headerValue("range", in: lines), range.hasPrefix("bytes="),
            let first = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false).first
        {
            start = Int64(first) ?? 0
        }
        return Exchange(target: target, rangeStart: start, started: Date())
    }

    /// The status and the announced body length (nil: until the close).
    private static func response(from head: [UInt8]) -> (Int?, Int64?) {
        let lines = lines(head)
        let parts = lines.first?.split(separator: " ") ?? []
        let status = parts.count > 1 ? Int(parts[1]) : nil
        if let status, status == 204 || status == 304 || (100..<200).contains(status) {
            return (status, 0)
        }
        if headerValue("transfer-encoding", in: lines)?.lowercased().contains("chunked") == true {
            return (status, nil)
        }
        return (status, headerValue("content-length", in: lines).flatMap { Int64($0) })
    }
}

/// Collects bytes until a blank line ends an HTTP head.
struct HTTPHeadReader {
    private var buffer: [UInt8] = []

    /// Every head complete in what arrived (requests of this harness have no body).
    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [[UInt8]] {
        var heads: [[UInt8]] = []
        var rest = bytes
        while !rest.isEmpty {
            let (head, used) = feedOne(rest)
            rest = rest.dropFirst(used)
            guard let head else {
                break
            }
            heads.append(head)
        }
        return heads
    }

    /// Takes bytes up to the end of one head: the head when it is complete, and how many bytes were used.
    mutating func feedOne(_ bytes: ArraySlice<UInt8>) -> ([UInt8]?, Int) {
        var used = 0
        for byte in bytes {
            buffer.append(byte)
            used += 1
            if byte == 10, buffer.count >= 4, buffer[buffer.count - 2] == 13, buffer[buffer.count - 3] == 10,
                buffer[buffer.count - 4] == 13
            {
                let head = buffer
                buffer = []
                return (head, used)
            }
        }
        return (nil, used)
    }
}
