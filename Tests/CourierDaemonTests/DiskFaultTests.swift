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

/// A full disk and failing I/O under courierd (docs/reliability.md): its state directory on a small tmpfs filled
/// during a download (root only: mounting needs it), and `ENOSPC` / `EIO` injected at the write, sync and rename calls
/// on its files by `Tests/Interposers/courier_io.c`. courierd never crashes, never hands over a file that is not the
/// server's, keeps its journal usable, and a download that ran out of space waits and goes on when there is room.
@Suite("courierd on a full or failing disk", .blockingWaits, .serialized)
struct DiskFaultTests {
    static let identifier = "com.example.podcasts.disk"
    static let session = IPCMessage.OpenSession(request: 1, identifier: identifier)

    static func download(_ identifier: Int, _ path: String, server: TestServer) -> IPCMessage.BackgroundTask {
        IPCMessage.BackgroundTask(
            identifier: identifier,
            kind: .download,
            request: TaskRequest(URLRequest(url: server.url(path)))
        )
    }

    static func create(_ task: IPCMessage.BackgroundTask, on client: inout Client) throws -> IPCMessage? {
        try client.request { .createTask(.init(request: $0, session: identifier, task: task)) }
    }

    /// Collects events, acknowledging each batch, until `task` completes; returns its completion and the file it
    /// handed over (checked by the caller before the acknowledgement deletes it: `check` runs on it first).
    static func completion(
        of task: Int,
        on client: inout Client,
        check: (String) -> Void = { _ in }
    ) throws -> TransferCompletion? {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, let batch = try client.nextBatch() {
            var ended: TransferCompletion?
            for event in batch.events where event.task == task {
                switch event.event.payload {
                case .downloaded(let path): check(path)
                case .complete(let completion): ended = completion
                default: break
                }
            }
            try client.send(.acknowledge(.init(session: identifier, through: batch.events.last?.sequence ?? 0)))
            if let ended {
                return ended
            }
        }
        return nil
    }

    /// Mounts a tmpfs of `megabytes` at `directory` (made first); false when this process may not mount.
    static func mountTmpfs(at directory: URL, megabytes: Int) -> Bool {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return geteuid() == 0 && mount("tmpfs", directory.path, "tmpfs", 0, "size=\(megabytes)m,mode=0700") == 0
    }

    @Test(
        "the state directory's disk fills mid-download: it waits, the journal stays intact, it goes on when room returns",
        .enabled(if: geteuid() == 0, "mounting a tmpfs needs root")
    )
    func diskFillsDuringADownload() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2", "--condition-poll", "0.2"])
        let stateRoot = daemon.root.appendingPathComponent("xdg-state")
        guard Self.mountTmpfs(at: stateRoot, megabytes: 8) else {
            Issue.record("cannot mount a tmpfs at \(stateRoot.path): errno \(errno)")
            return
        }
        defer {
            _ = daemon.stop()
            umount2(stateRoot.path, Int32(MNT_DETACH))
            daemon.cleanup()
        }
        // 3 MiB of someone else's file: what the user deletes to make room.
        let ballast = stateRoot.appendingPathComponent("ballast")
        #expect(FileManager.default.createFile(atPath: ballast.path, contents: Data(count: 3 << 20)))
        try daemon.start()
        var (client, answer) = try Client.opening(Self.session, on: daemon)
        defer { client.close() }
        guard case .reply(let opened)? = answer, case .sessionOpened = opened.result else {
            Issue.record("the session did not open: \(String(describing: answer))")
            return
        }

        // A small download finishes; a large one fills the disk.
        let small = "/bytes/\(256 << 10)?seed=1"
        let large = "/bytes/\(6 << 20)?seed=2&trickle=65536&interval=10"
        #expect(try Self.create(Self.download(1, small, server: server), on: &client).map(Self.created) == true)
        let smallEnd = try Self.completion(of: 1, on: &client) { path in
            #expect(FileManager.default.contents(atPath: path) == TestServer.bytes(count: 256 << 10, seed: 1))
        }
        #expect(smallEnd?.error == nil)
        #expect(try Self.create(Self.download(2, large, server: server), on: &client).map(Self.created) == true)

        // The large one waits, saying why, keeping what it has.
        let waiting = try client.tasks(of: Self.identifier, timeout: 20) {
            $0.first { $0.identifier == 2 }?.waitingReason?.contains("free space") == true
        }
        let reason = waiting.first { $0.identifier == 2 }?.waitingReason ?? "none"
        #expect(reason.contains("insufficientSpace"), "waiting reason: \(reason)")
        let kept = waiting.first { $0.identifier == 2 }?.countOfBytesReceived ?? 0
        #expect(kept > 1 << 20, "kept \(kept) bytes")

        // With the disk full, a new task is journaled or refused with a typed error; courierd stays up.
        let third = try Self.create(Self.download(3, "/bytes/1024?seed=3", server: server), on: &client)
        switch third {
        case .reply(let reply)? where reply.result == .taskCreated:
            break
        case .failure(let failure)?:
            #expect(failure.error.code != .unknown, "untyped refusal: \(failure.error)")
        default:
            Issue.record("no answer to createTask on a full disk: \(String(describing: third))")
        }

        // Room returns: the large one goes on from its partial file and completes with the server's bytes.
        try FileManager.default.removeItem(at: ballast)
        server.removeAllRequests()
        let largeEnd = try Self.completion(of: 2, on: &client) { path in
            #expect(FileManager.default.contents(atPath: path) == TestServer.bytes(count: 6 << 20, seed: 2))
        }
        #expect(largeEnd?.error == nil, "\(String(describing: largeEnd?.error))")
        let ranges = server.requests.filter { $0.path.hasPrefix("/bytes/\(6 << 20)") }.compactMap { $0.header("Range") }
        #expect(ranges.contains { $0.hasPrefix("bytes=") && $0 != "bytes=0-" }, "requests' ranges: \(ranges)")
        print("disk full: waited with \(kept) bytes kept (\(reason)); went on with \(ranges)")

        // The journal is intact: courierd starts on it again without setting it aside.
        #expect(daemon.stop() == .exited(0))
        try daemon.start()
        let names = try FileManager.default.contentsOfDirectory(atPath: daemon.state.path)
        #expect(!names.contains { $0.hasPrefix("journal.sqlite.") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
        var looking = try Client.looking(at: daemon.socket)
        defer { looking.close() }
        let sessions = try looking.request { .listSessions(.init(request: $0)) }
        guard case .reply(let reply)? = sessions, case .sessions(let summaries) = reply.result else {
            Issue.record("no session list: \(String(describing: sessions))")
            return
        }
        #expect(summaries.contains { $0.identifier == Self.identifier })
        try await server.shutdown()
    }

    /// One call made to fail, and what the download must end with.
    struct InjectedFault: Sendable, CustomStringConvertible {
        enum Outcome: Sendable {
            /// The server's bytes, handed over.
            case completes
            /// This error, and no file handed over.
            case fails(CourierError.Code)
            /// Either of those: the fault hits the journal, whichever write it meets.
            case survives
        }

        var description: String
        var fault: IOInterposer.Fault
        var outcome: Outcome
    }

    /// Built per test (values held by a static array would outlive the test and show as leaks under LSan).
    static var injectedFaults: [InjectedFault] {
        [
            InjectedFault(
                description: "ENOSPC at two writes of the partial file: waits, goes on",
                fault: .init(.write, "ENOSPC", from: 4, count: 2, pathPart: "/staging/"),
                outcome: .completes
            ),
            InjectedFault(
                description: "EIO at a write of the partial file",
                fault: .init(.write, "EIO", from: 4, count: 1, pathPart: "/staging/"),
                outcome: .fails(.cannotWriteToFile)
            ),
            InjectedFault(
                // The file was handed over before its flush (the bytes the engine hashed); the failed flush leaves its
                // record, checked against the digest after the next boot (fsyncgate: a failed flush is never trusted).
                description: "EIO at every flush of the finished file (syncfs, then fsync)",
                fault: .init(.sync, "EIO", pathPart: "/downloads"),
                outcome: .completes
            ),
            InjectedFault(
                description: "EIO at the rename into the downloads directory",
                fault: .init(.rename, "EIO", count: 1, pathPart: "/downloads/"),
                outcome: .fails(.cannotMoveFile)
            ),
            InjectedFault(
                // Past the writes of a new journal's creation, the app's hello and its session: the ones of createTask
                // (docs/reliability.md: the first start on a full disk ends with `cannot start`, said on standard
                // error).
                description: "ENOSPC at five of the journal's writes",
                fault: .init(.write, "ENOSPC", from: 114, count: 5, pathPart: "journal.sqlite"),
                outcome: .survives
            ),
            InjectedFault(
                description: "EIO at a sync of the journal",
                fault: .init(.sync, "EIO", from: 13, count: 1, pathPart: "journal.sqlite"),
                outcome: .survives
            ),
        ]
    }

    @Test("ENOSPC and EIO at courierd's writes, syncs and renames: a typed end, no crash, no wrong file handed over")
    func injectedFaults() async throws {
        let server = try await TestServer.start()
        for (index, injected) in Self.injectedFaults.enumerated() {
            let daemon = Daemon(arguments: ["--retry-delay", "0.2", "--condition-poll", "0.2"])
            defer { daemon.cleanup() }
            let stateRoot = daemon.root.appendingPathComponent("xdg-state")
            try FileManager.default.createDirectory(at: stateRoot, withIntermediateDirectories: true)
            daemon.environment.merge(try IOInterposer.environment(root: stateRoot, faults: [injected.fault])) { $1 }
            try daemon.start()
            var (client, _) = try Client.opening(Self.session, on: daemon)
            let count = 1 << 20
            let path = "/bytes/\(count)?seed=\(index)&trickle=65536&interval=10"
            var handedOver: Data?
            var completion: TransferCompletion?
            var refusal: CourierError?
            switch try Self.create(Self.download(1, path, server: server), on: &client) {
            case .reply(let reply)? where reply.result == .taskCreated:
                completion = try Self.completion(of: 1, on: &client) {
                    handedOver = FileManager.default.contents(atPath: $0)
                }
            case .failure(let failure)?:
                // The journal refused the task: a typed error, at once.
                refusal = failure.error
                #expect(failure.error.code != .unknown, "\(injected): untyped refusal \(failure.error)")
            case let other:
                Issue.record("\(injected): no answer to createTask: \(String(describing: other))")
            }
            client.close()
            if let handedOver {
                #expect(
                    handedOver == TestServer.bytes(count: count, seed: index),
                    "\(injected): a wrong file handed over"
                )
            }
            switch injected.outcome {
            case .completes:
                #expect(completion?.error == nil && handedOver != nil, "\(injected): \(String(describing: completion))")
            case .fails(let code):
                #expect(completion?.error?.code == code, "\(injected): \(String(describing: completion?.error))")
                #expect(handedOver == nil, "\(injected): a file handed over")
            case .survives:
                #expect(completion == nil || completion?.error == nil || completion?.error?.code != .unknown)
            }
            #expect(daemon.stop() == .exited(0), "\(injected): courierd did not end cleanly")
            // Without the faults, courierd opens its journal as it is (not set aside) and serves.
            daemon.environment["LD_PRELOAD"] = nil
            try daemon.start()
            let names = try FileManager.default.contentsOfDirectory(atPath: daemon.state.path)
            #expect(!names.contains { $0.contains(".corrupt-") }, "\(injected): the journal was set aside: \(names)")
            var looking = try Client.looking(at: daemon.socket)
            let sessions = try looking.request { .listSessions(.init(request: $0)) }
            looking.close()
            guard case .reply(let reply)? = sessions, case .sessions(let summaries) = reply.result else {
                Issue.record("\(injected): no session list after the faults: \(String(describing: sessions))")
                continue
            }
            #expect(summaries.contains { $0.identifier == Self.identifier }, "\(injected)")
            let end =
                if let refusal { "createTask refused with \(refusal.code)" } else if let error = completion?.error {
                    "the task ended with \(error.code)"
                } else {
                    "the task completed, the file the server's"
                }
            print("injected fault: \(injected): \(end)")
        }
        try await server.shutdown()
    }

    static func created(_ message: IPCMessage) -> Bool {
        if case .reply(let reply) = message, reply.result == .taskCreated {
            return true
        }
        return false
    }
}
