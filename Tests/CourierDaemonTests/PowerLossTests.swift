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

/// Power loss at every durable step (docs/reliability.md). courierd runs a workload — downloads that finish, trickled
/// ones that are checkpointed, one cancelled with resume data and resumed from it by a new task, every event
/// delivered and acknowledged — with `Tests/Interposers/courier_io.c` preloaded, which records every call that
/// changes its state directory (its own files and SQLite's alike). The test, acting as the app over the socket, appends
/// markers to the same trace as it goes: a task's `createTask` answered (`resume()` returned), each event delivered,
/// each acknowledgement sent and known to be journaled (a request answered after it on the same connection).
///
/// Then, for each point of the trace, ``PowerCutModel`` builds what a power cut there leaves (unsynced bytes lost, a
/// name not followed by its directory's sync undone), and what a process kill leaves (everything). courierd starts on
/// each such state (its runtime directory empty, as after a reboot), the app opens the session again, and:
///
/// - courierd starts and serves (the session opens);
/// - every task whose `createTask` was answered exists (in the task list or the replayed events), unless the app had
///   been given its completion (then an acknowledgement may have been journaled);
/// - no event acknowledged (journaled) is delivered again; every event delivered and not acknowledged is delivered
///   again (progress aside: it is coalesced), under its number, or newly numbered when a power cut damaged its task's
///   file and the task ran again;
/// - every file handed over (a `downloaded` event, live or replayed) is the server's bytes; its name was durable when
///   it was handed over (checked in the model at that marker), its bytes need not be (``UnsyncedFile``): after a
///   power cut (courierd starts as in another boot, `COURIER_BOOT_ID`), a file the app acknowledged is the server's
///   bytes again in the app's link to it (made before courierd starts), and one it had not acknowledged is handed
///   over again whole;
/// - with `finish`, the tasks then run to their end: each file what the server serves.
///
/// Power-cut states only change at a sync, so the points between two syncs share one state: each distinct state is
/// explored once, at the last point that has it (the most promises made). The test command explores every distinct
/// power-cut state and every `COURIER_POWER_LOSS_KILL_STRIDE`-th (default 25) process-kill state, and runs the tasks to
/// their end on every third power-cut state; `scripts/power-loss.sh` runs everything (stride 1, all finished).
@Suite("courierd power loss", .blockingWaits, .serialized)
struct PowerLossTests {
    static let identifier = "com.example.podcasts.powerloss"
    static let session = IPCMessage.OpenSession(request: 1, identifier: identifier)
    /// The boot courierd runs the workload in; a power cut's state is started in the next one (a kill's in the same).
    static let bootBefore = "boot-before-the-cut"
    static let bootAfter = "boot-after-the-cut"

    /// A task's download: `/bytes/count?seed=seed`, trickled (64 KiB every 50 ms) when `trickled`.
    struct Download {
        var count: Int
        var seed: Int
        var trickled: Bool

        var path: String {
            "/bytes/\(count)?seed=\(seed)" + (trickled ? "&trickle=65536&interval=50" : "")
        }

        var bytes: Data { TestServer.bytes(count: count, seed: seed) }
    }

    /// Task 1 finishes at once; task 2 lasts over a second (checkpointed); task 3 is cancelled with resume data
    /// after 0.5 s, and task 4 goes on from it (the same entity).
    static let downloads: [Int: Download] = [
        1: Download(count: 48 << 10, seed: 1, trickled: false),
        2: Download(count: 1_536 << 10, seed: 2, trickled: true),
        3: Download(count: 2 << 20, seed: 3, trickled: true),
    ]

    static func expected(for task: Int) -> Download? {
        downloads[task == 4 ? 3 : task]
    }

    /// A positive whole number from the environment, or `value`.
    static func setting(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { max($0, 1) } ?? value
    }

    @Test("a power cut or a kill at every durable step: courierd starts, loses no task, file or event")
    func powerCutAtEveryDurableStep() async throws {
        let killStride = Self.setting("COURIER_POWER_LOSS_KILL_STRIDE", default: 25)
        let finishStride = Self.setting("COURIER_POWER_LOSS_FINISH_STRIDE", default: 3)
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"], environment: ["COURIER_BOOT_ID": Self.bootBefore])
        defer { daemon.cleanup() }
        let stateRoot = daemon.root.appendingPathComponent("xdg-state")
        try FileManager.default.createDirectory(at: stateRoot, withIntermediateDirectories: true)
        let traceURL = daemon.root.appendingPathComponent("io.trace")
        let preload = try IOInterposer.environment(root: stateRoot, trace: traceURL)
        daemon.environment.merge(preload) { $1 }

        var violations: [String] = []
        let markers = try TraceMarkers(traceURL)
        try Self.runWorkload(on: daemon, server: server, markers: markers, violations: &violations)
        markers.close()
        #expect(daemon.stop() == .exited(0))
        for name in preload.keys {
            daemon.environment[name] = nil
        }

        let trace = try IOTrace(contentsOf: traceURL)
        if ProcessInfo.processInfo.environment["COURIER_POWER_LOSS_VERBOSE"] != nil {
            Self.printTrace(trace)
        }
        let calls = trace.records.filter { !$0.isMarker }.count
        #expect(calls > 50, "the trace has \(calls) calls: the interposer did not see courierd's files")

        // Every point: the promises made so far, the state each kind of crash leaves.
        var model = PowerCutModel(root: stateRoot.path)
        var promises = Promises()
        var powerCuts: [Candidate] = []
        /// Torn and reordered writes (``PowerCutModel/tornAndReordered()``) at the last point of each power-cut state.
        var tornAndReordered: [Candidate] = []
        var kills: [Candidate] = []
        var point = 0
        for (recordIndex, record) in trace.records.enumerated() {
            model.apply(record)
            if case .marker(let text) = record {
                promises.note(text)
                // A file handed over has a durable name when the app is told of it (its bytes are checked after a power
                // cut, and fetched again in place if the app has it: the name is how courierd finds it).
                if let handed = Promises.handedOver(text) {
                    let relative = String(handed.path.dropFirst(stateRoot.path.count + 1))
                    if case .file? = model.afterPowerCut()[relative] {
                    } else {
                        violations.append(
                            "call \(point): task \(handed.task)'s file \(relative) handed over, its name not durable"
                        )
                    }
                }
                powerCuts[powerCuts.count - 1].promises.append(promises)
                continue
            }
            point += 1
            let state = model.afterPowerCut()
            if let last = powerCuts.last, last.state == state {
                powerCuts[powerCuts.count - 1].points = last.points.lowerBound...point
            } else {
                powerCuts.append(Candidate(points: point...point, state: state, promises: [promises]))
            }
            // The next call is a sync (or the trace ends): what was unsynced here is the most a torn or reordered
            // write could leave of this state.
            if Self.endsUnsyncedStretch(trace.records, after: recordIndex) {
                for variant in model.tornAndReordered() {
                    tornAndReordered.append(
                        Candidate(points: point...point, state: variant.state, promises: [promises], kind: variant.kind)
                    )
                }
            }
            if point % killStride == 0 || point == calls {
                kills.append(Candidate(points: point...point, state: model.afterProcessKill(), promises: [promises]))
            }
        }

        var found: Set<String> = []
        var (appCopies, damagedAppCopies) = (0, 0)
        for (index, candidate) in powerCuts.enumerated() {
            try PowerCutModel.materialize(candidate.state, at: stateRoot)
            let label = "power cut after calls \(candidate.points)"
            let finish = index % finishStride == 0 || index == powerCuts.count - 1
            let recovery = Self.recover(daemon, finish: finish, boot: Self.bootAfter, promises: candidate.promises)
            appCopies += recovery.appCopies
            damagedAppCopies += recovery.damagedAppCopies
            for promised in candidate.promises {
                found.formUnion(recovery.violations(of: promised).map { "\(label): \($0)" })
            }
        }
        for candidate in tornAndReordered {
            try PowerCutModel.materialize(candidate.state, at: stateRoot)
            let label = "\(candidate.kind ?? "") after call \(candidate.points.lowerBound)"
            let recovery = Self.recover(daemon, finish: false, boot: Self.bootAfter, promises: candidate.promises)
            found.formUnion(recovery.violations(of: candidate.promises[0]).map { "\(label): \($0)" })
        }
        for candidate in kills {
            try PowerCutModel.materialize(candidate.state, at: stateRoot)
            let recovery = Self.recover(daemon, finish: false, boot: Self.bootBefore, promises: candidate.promises)
            found.formUnion(
                recovery.violations(of: candidate.promises[0]).map { "kill after call \(candidate.points): \($0)" }
            )
        }
        violations += found.sorted()
        print(
            "power loss: \(calls) calls recorded, \(powerCuts.count) distinct power-cut states explored (covering all "
                + "\(calls) points), \(tornAndReordered.count) torn or reordered write states ("
                + Dictionary(grouping: tornAndReordered, by: { $0.kind ?? "" }).map { "\($0.value.count) \($0.key)" }
                    .sorted().joined(separator: ", ") + "), "
                + "\(kills.count) process-kill states (every \(killStride)), "
                + "\(appCopies) app copies of acknowledged files checked after power cuts (\(damagedAppCopies) "
                + "damaged when courierd had opened the session), \(violations.count) violations"
        )
        #expect(violations.isEmpty, "\(violations.prefix(30).joined(separator: "\n"))")
        try await server.shutdown()
    }

    /// Each call and marker, numbered as the labels number them (a write without its bytes).
    static func printTrace(_ trace: IOTrace) {
        var call = 0
        for record in trace.records {
            if !record.isMarker {
                call += 1
            }
            if case .write(let descriptor, let offset, let bytes) = record {
                print("call \(call): write(descriptor: \(descriptor), offset: \(offset), count: \(bytes.count))")
            } else {
                print("call \(call): \(record)")
            }
        }
    }

    /// A state to start courierd on: what a crash at any of `points` leaves, and what the app had been promised at
    /// each marker among them.
    struct Candidate {
        var points: ClosedRange<Int>
        var state: [String: PowerCutModel.Entry]
        var promises: [Promises]
        /// For a torn or reordered write: which.
        var kind: String?
    }

    /// Whether the call after `index` (markers skipped) is a sync, or there is none: the end of a stretch of unsynced
    /// changes.
    static func endsUnsyncedStretch(_ records: [IOTrace.Record], after index: Int) -> Bool {
        for record in records[(index + 1)...] where !record.isMarker {
            switch record {
            case .sync, .syncAll: return true
            default: return false
            }
        }
        return true
    }

    // MARK: The workload

    /// The test's markers, appended to courierd's trace (one write each, so they never split a record).
    struct TraceMarkers {
        let descriptor: Int32

        init(_ url: URL) throws {
            descriptor = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw POSIXError(.EIO)
            }
        }

        func close() {
            _ = Glibc.close(descriptor)
        }

        func mark(_ text: String) {
            let record = IOTrace.marker(text)
            _ = record.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    static func setReadTimeout(_ client: Client, milliseconds: Int) {
        var timeout = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(client.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    static func create(
        _ identifier: Int,
        resumeData: Data? = nil,
        on client: inout Client,
        server: TestServer
    ) throws -> Bool {
        guard let download = expected(for: identifier) else {
            return false
        }
        let task = IPCMessage.BackgroundTask(
            identifier: identifier,
            kind: .download,
            request: TaskRequest(URLRequest(url: server.url(download.path))),
            resumeData: resumeData
        )
        let answer = try client.request { .createTask(.init(request: $0, session: Self.identifier, task: task)) }
        guard case .reply(let reply)? = answer, reply.result == .taskCreated else {
            Issue.record("task \(identifier) not created: \(String(describing: answer))")
            return false
        }
        return true
    }

    static func runWorkload(
        on daemon: Daemon,
        server: TestServer,
        markers: TraceMarkers,
        violations: inout [String]
    ) throws {
        try daemon.start()
        var (client, answer) = try Client.opening(session, on: daemon)
        defer { client.close() }
        guard case .reply(let reply)? = answer, case .sessionOpened = reply.result else {
            Issue.record("the session did not open: \(String(describing: answer))")
            return
        }
        for identifier in 1...3 where try create(identifier, on: &client, server: server) {
            markers.mark("resumed \(identifier)")
        }
        let cancelAt = Date().addingTimeInterval(0.5)
        var cancelled = false
        var ended: Set<Int> = []
        let deadline = Date().addingTimeInterval(60)
        while ended != [1, 2, 3, 4], Date() < deadline {
            Self.setReadTimeout(client, milliseconds: 20)
            let batch = try client.nextBatch()
            Self.setReadTimeout(client, milliseconds: 20_000)
            var resumeData: Data?
            if let batch {
                for event in batch.events {
                    markers.mark(Promises.delivered(event))
                    switch event.event.payload {
                    case .downloaded(let path):
                        if let problem = check(path, task: event.task) {
                            violations.append("workload: \(problem)")
                        }
                    case .complete(let completion):
                        ended.insert(event.task)
                        if event.task == 3 {
                            resumeData = completion.error?.resumeData
                            if completion.error?.code != .cancelled {
                                ended.insert(4)  // It finished before the cancel: nothing to resume.
                            }
                        } else if let error = completion.error {
                            violations.append("workload: task \(event.task) failed: \(error)")
                        }
                    default:
                        break
                    }
                }
                let through = batch.events.map(\.sequence).max() ?? 0
                markers.mark("ack-sent \(through)")
                try client.send(.acknowledge(.init(session: identifier, through: through)))
                // Answered after the acknowledgement was handled: it is journaled.
                _ = try client.request { .listTasks(.init(request: $0, session: Self.identifier)) }
                markers.mark("acked \(through)")
            }
            if !cancelled, Date() >= cancelAt {
                cancelled = true
                let answer = try client.request {
                    .command(.init(request: $0, session: Self.identifier, task: 3, verb: .cancelProducingResumeData))
                }
                if case .failure = answer {
                    Issue.record("cancel refused: \(String(describing: answer))")
                }
            }
            if let resumeData, try create(4, resumeData: resumeData, on: &client, server: server) {
                markers.mark("resumed 4")
            }
        }
        #expect(ended == [1, 2, 3, 4], "the workload did not end: \(ended.sorted())")
    }

    /// Why the file at `path` is not task `task`'s download, or nil when it is.
    static func check(_ path: String, task: Int) -> String? {
        guard let expected = expected(for: task)?.bytes else {
            return "task \(task) is not planned"
        }
        // (`fileContents`: a damaged file may be empty, which `FileManager.contents` leaks a buffer reading.)
        guard let data = try? fileContents(URL(fileURLWithPath: path)) else {
            return "task \(task): no file at \(path)"
        }
        return data == expected
            ? nil : "task \(task): \(path) has \(data.count) bytes, not the \(expected.count) served"
    }

    // MARK: After the crash

    /// What courierd made of a crash state: the tasks it knows, the events it replayed when the app opened the session
    /// again, and what went wrong whatever the promises (it did not start, a file handed over is wrong, a task did
    /// not end).
    struct Recovery {
        var known: Set<Int> = []
        /// Tasks listed with no completion replayed: running, or run again and perhaps completed already (when a power
        /// cut damaged the file it had finished with before the app acknowledged it; its events then come again,
        /// newly numbered).
        var unfinished: Set<Int> = []
        var replayed: [IPCMessage.SequencedEvent] = []
        var problems: [String] = []
        /// The app's links checked, and how many of them courierd had to fetch again.
        var appCopies = 0
        var damagedAppCopies = 0

        /// The promises broken.
        func violations(of promises: Promises) -> [String] {
            var violations = problems
            for task in promises.resumed.subtracting(known).subtracting(promises.told).sorted() {
                violations.append("task \(task) was created, and is gone")
            }
            let replayedSequences = Dictionary(replayed.map { ($0.sequence, $0) }) { first, _ in first }
            for event in replayed where event.sequence <= promises.acknowledged {
                violations.append("event \(event.sequence) was acknowledged, and is delivered again")
            }
            for (sequence, delivery) in promises.delivered.sorted(by: { $0.key < $1.key })
            where sequence > promises.acknowledgementSent && delivery.kind != "progress"
                && replayedSequences[sequence].map(Promises.kind) != delivery.kind
                && !unfinished.contains(delivery.task)
                && !ranAgain(delivery, withdrawn: sequence, replayedSequences: replayedSequences)
            {
                violations.append(
                    "event \(sequence) (\(delivery.kind) of task \(delivery.task)) was delivered, not acknowledged, "
                        + "and is not delivered again"
                )
            }
            return violations
        }

        /// Whether the event numbered `withdrawn` came again as its task's run again: a task whose file a power cut
        /// damaged before the app acknowledged it runs again from zero, its unacknowledged events withdrawn
        /// (`Journal.runAgain`), and when the run ends before the app opens the session, the replay holds its new
        /// events, numbered after every event journaled before (the session's counter), not the withdrawn ones.
        func ranAgain(
            _ delivery: (task: Int, kind: String),
            withdrawn: UInt64,
            replayedSequences: [UInt64: IPCMessage.SequencedEvent]
        ) -> Bool {
            replayedSequences[withdrawn] == nil
                && replayed.contains { event in
                    event.task == delivery.task && event.sequence > withdrawn && Promises.kind(event) == delivery.kind
                }
        }
    }

    /// Starts courierd on the state now in its directories (the runtime directory emptied, as a reboot does) in
    /// `boot`, opens the session as the app and looks; with `finish`, waits for every task it knows to end. Before
    /// courierd starts, the app links each file courierd handed over and the app acknowledged (per `promises`) where it
    /// keeps it, as a background Session does; after, each such link must hold the server's bytes.
    static func recover(_ daemon: Daemon, finish: Bool, boot: String, promises: [Promises]) -> Recovery {
        try? FileManager.default.removeItem(at: daemon.runtime)
        daemon.environment["COURIER_BOOT_ID"] = boot
        let appCopies = linkAcknowledgedFiles(promises, for: daemon)
        var recovery = look(at: daemon, finish: finish)
        recovery.appCopies = appCopies.count
        recovery.damagedAppCopies = appCopies.filter { !holds($0) }.count
        recovery.problems += checkAppCopies(appCopies)
        daemon.kill()
        return recovery
    }

    /// Starts courierd, opens the session as the app and looks; with `finish`, waits for every task it knows to end.
    static func look(at daemon: Daemon, finish: Bool) -> Recovery {
        var recovery = Recovery()
        do {
            try daemon.start()
        } catch {
            recovery.problems.append("courierd did not start (\(error))")
            return recovery
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: daemon.state.path)) ?? []
        if let setAside = names.first(where: { $0.contains(".corrupt-") }) {
            recovery.problems.append("the journal was unusable, set aside as \(setAside)")
        }
        do {
            var (client, answer) = try Client.opening(session, on: daemon)
            defer { client.close() }
            guard case .reply(let reply)? = answer, case .sessionOpened = reply.result else {
                recovery.problems.append("the session did not open: \(String(describing: answer))")
                return recovery
            }
            recovery.replayed = client.events.flatMap(\.events)
            let snapshots = try client.tasks(of: Self.identifier, timeout: 0) { _ in true }
            let listed = snapshots.map(\.identifier)
            recovery.known = Set(listed).union(recovery.replayed.map(\.task))
            // Every listed task without a completion in the replay ran after the restart: one still running, or one
            // that courierd ran again (its file was damaged) and that completed between the replay and this listing
            // (a small download on loopback does; its new events come after, newly numbered). A task whose
            // completion was acknowledged has no unacknowledged event left to check.
            recovery.unfinished = Set(listed)
                .subtracting(recovery.replayed.filter { $0.event.completion != nil }.map(\.task))
            var open = Set(listed)
            for event in recovery.replayed {
                note(event, open: &open, problems: &recovery.problems)
            }
            guard finish else {
                // A task listed as completed with no completion in the replay completed after it: its completion
                // must come next, newly numbered (not seeing it is a lost completion, not a task run again).
                let completedState = 3  // URLSessionTask.State.completed
                var owed = Set(snapshots.filter { $0.state == completedState }.map(\.identifier)).intersection(open)
                Self.setReadTimeout(client, milliseconds: 10_000)
                while !owed.isEmpty, let batch = try? client.nextBatch() {
                    for event in batch.events where event.event.completion != nil {
                        owed.remove(event.task)
                    }
                }
                if !owed.isEmpty {
                    recovery.problems.append("tasks \(owed.sorted()) are listed as completed and their completion never came")
                }
                return recovery
            }
            let replayedThrough = recovery.replayed.map(\.sequence).max() ?? 0
            try client.send(.acknowledge(.init(session: Self.identifier, through: replayedThrough)))
            let deadline = Date().addingTimeInterval(30)
            var seen = Set(recovery.replayed.map(\.sequence))
            while !open.isEmpty, Date() < deadline, let batch = try client.nextBatch() {
                // Sent again (delivery is at least once): skipped by its sequence number, as an app does.
                for event in batch.events where seen.insert(event.sequence).inserted {
                    note(event, open: &open, problems: &recovery.problems)
                }
                let through = batch.events.last?.sequence ?? 0
                try client.send(.acknowledge(.init(session: Self.identifier, through: through)))
            }
            if !open.isEmpty {
                recovery.problems.append("tasks \(open.sorted()) did not end within 30 s")
            }
        } catch {
            recovery.problems.append("\(error)")
        }
        return recovery
    }

    /// The app's links to the files it acknowledged that are in the state (courierd deletes its name of a file once
    /// it is flushed and acknowledged): the link's path and the task's bytes.
    static func linkAcknowledgedFiles(_ promises: [Promises], for daemon: Daemon) -> [(path: String, bytes: Data)] {
        let directory = daemon.root.appendingPathComponent("app-copies")
        try? FileManager.default.removeItem(at: directory)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var copies: [(path: String, bytes: Data)] = []
        var linked: Set<String> = []
        for promised in promises {
            for (sequence, file) in promised.handedFiles where sequence <= promised.acknowledged {
                guard let task = promised.delivered[sequence]?.task, let bytes = expected(for: task)?.bytes,
                    linked.insert(file).inserted
                else {
                    continue
                }
                let copy = directory.appendingPathComponent("\(sequence)").path
                if link(file, copy) == 0 {
                    copies.append((copy, bytes))
                }
            }
        }
        return copies
    }

    /// Whether the app's copy holds the server's bytes (read with `fileContents`: a damaged copy may be empty, and
    /// `FileManager.contents` leaks a buffer reading an empty file).
    static func holds(_ copy: (path: String, bytes: Data)) -> Bool {
        (try? fileContents(URL(fileURLWithPath: copy.path))) == copy.bytes
    }

    /// What is wrong with the app's links once courierd has had 15 s to fetch damaged files again.
    static func checkAppCopies(_ copies: [(path: String, bytes: Data)]) -> [String] {
        let deadline = Date().addingTimeInterval(15)
        var wrong = copies
        while !wrong.isEmpty, Date() < deadline {
            wrong.removeAll(where: holds)
            if !wrong.isEmpty {
                usleep(50_000)
            }
        }
        return wrong.map { copy in
            "the app's copy \(copy.path) of a file it acknowledged has "
                + "\((try? fileContents(URL(fileURLWithPath: copy.path)))?.count ?? -1) bytes, not the server's "
                + "\(copy.bytes.count)"
        }
    }

    /// An event after the crash: a file handed over must be the server's; a completion ends its task (with no error
    /// but task 3's cancellation).
    static func note(_ event: IPCMessage.SequencedEvent, open: inout Set<Int>, problems: inout [String]) {
        switch event.event.payload {
        case .downloaded(let path):
            if let problem = check(path, task: event.task) {
                problems.append(problem)
            }
        case .complete(let completion):
            open.remove(event.task)
            if let error = completion.error, !(event.task == 3 && error.code == .cancelled) {
                problems.append("task \(event.task) failed after the crash: \(error)")
            }
        default:
            break
        }
    }
}

/// What the app had been promised by a point of the trace, from the markers before it.
struct Promises {
    /// Tasks whose `createTask` was answered.
    var resumed: Set<Int> = []
    /// Events the app was given: their task and kind.
    var delivered: [UInt64: (task: Int, kind: String)] = [:]
    /// Tasks whose completion the app was given.
    var told: Set<Int> = []
    /// The file each `downloaded` event the app was given handed over, by sequence number.
    var handedFiles: [UInt64: String] = [:]
    /// The highest sequence number an acknowledgement was sent for, and known journaled for.
    var acknowledgementSent: UInt64 = 0
    var acknowledged: UInt64 = 0

    static func kind(_ event: IPCMessage.SequencedEvent) -> String {
        switch event.event.payload {
        case .progress: "progress"
        case .complete: "complete"
        case .downloaded: "downloaded"
        case .response: "response"
        case .resumed: "resumed"
        default: "other"
        }
    }

    /// The marker of a delivered event: `delivered <sequence> <task> <kind> [<path>]`.
    static func delivered(_ event: IPCMessage.SequencedEvent) -> String {
        var text = "delivered \(event.sequence) \(event.task) \(kind(event))"
        if case .downloaded(let path) = event.event.payload {
            text += " \(path)"
        }
        return text
    }

    /// The task and file of a `downloaded` delivery marker.
    static func handedOver(_ marker: String) -> (task: Int, path: String)? {
        let fields = marker.split(separator: " ", maxSplits: 4)
        guard fields.count == 5, fields[0] == "delivered", fields[3] == "downloaded", let task = Int(fields[2]) else {
            return nil
        }
        return (task, String(fields[4]))
    }

    mutating func note(_ marker: String) {
        let fields = marker.split(separator: " ")
        guard fields.count >= 2, let number = UInt64(fields[1]) else {
            return
        }
        switch fields[0] {
        case "resumed":
            resumed.insert(Int(number))
        case "delivered" where fields.count >= 4:
            let task = Int(fields[2]) ?? 0
            delivered[number] = (task, String(fields[3]))
            if fields[3] == "complete" {
                told.insert(task)
            }
            if let handed = Promises.handedOver(marker) {
                handedFiles[number] = handed.path
            }
        case "ack-sent":
            acknowledgementSent = max(acknowledgementSent, number)
        case "acked":
            acknowledged = max(acknowledged, number)
        default:
            break
        }
    }
}
