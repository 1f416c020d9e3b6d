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

/// Finished downloads are handed over before their bytes are flushed (``UnsyncedFile``, docs/reliability.md). A
/// power cut is played here as the tests of the reliability issue name it: courierd SIGKILLed with its flush batch
/// held back (`--file-flush-delay 600`), every file it had not flushed truncated to nothing (what a power cut leaves
/// of bytes never written back), and courierd started as after another boot (`COURIER_BOOT_ID`).
@Suite("courierd hands over unflushed files", .blockingWaits, .serialized)
struct UnflushedFileTests {
    static let identifier = "com.example.unflushed"
    static let session = IPCMessage.OpenSession(request: 1, identifier: identifier)

    /// Creates download `task` of `path`; `headerLines` go in its spec as the app's task would put them (a name may
    /// repeat).
    static func create(
        _ task: Int,
        path: String,
        headerLines: [String] = [],
        on client: inout Client,
        server: TestServer
    ) throws {
        var spec = IPCMessage.BackgroundTask(
            identifier: task,
            kind: .download,
            request: TaskRequest(URLRequest(url: server.url(path)))
        )
        spec.spec.headers += headerLines
        let answer = try client.request { .createTask(.init(request: $0, session: identifier, task: spec)) }
        guard case .reply(let reply)? = answer, reply.result == .taskCreated else {
            Issue.record("task \(task) not created: \(String(describing: answer))")
            return
        }
    }

    /// The events until task `task` completes; its file's path (from `downloaded`) and the last sequence number.
    static func untilComplete(
        _ task: Int,
        on client: inout Client
    ) throws -> (file: String?, through: UInt64, error: CourierError?) {
        let events = try client.events { $0.task == task && $0.event.completion != nil }
        var file: String?
        for sequenced in events where sequenced.task == task {
            if case .downloaded(let path) = sequenced.event.payload {
                file = path
            }
        }
        return (file, events.last?.sequence ?? 0, events.last?.event.completion?.error)
    }

    /// A courierd in `boot` whose flush batches wait 600 s: every file it hands over stays unflushed.
    static func daemonHoldingFlushes(boot: String) -> Daemon {
        Daemon(
            arguments: ["--retry-delay", "0.2", "--file-flush-delay", "600"],
            environment: ["COURIER_BOOT_ID": boot]
        )
    }

    /// The file's length; -1 when it is missing.
    static func size(of file: URL) -> Int {
        var info = stat()
        return stat(file.path, &info) == 0 ? Int(info.st_size) : -1
    }

    static func unflushedFiles(of daemon: Daemon) throws -> [UnsyncedFile] {
        try Journal(at: daemon.paths.journal).unsyncedFiles()
    }

    @Test("after a power cut, a file the app took is fetched again in place, one it had not taken runs again")
    func powerCutBeforeFlush() async throws {
        let server = try await TestServer.start()
        let daemon = Self.daemonHoldingFlushes(boot: "boot-before")
        defer { daemon.cleanup() }
        try daemon.start()
        let taken = TestServer.bytes(count: 3 << 20, seed: 61)
        let untaken = TestServer.bytes(count: 1 << 20, seed: 62)
        let app = daemon.root.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        let appFile = app.appendingPathComponent("taken.bin")

        var (client, _) = try Client.opening(Self.session, on: daemon)
        // Task 1: handed over, linked where the app keeps it (as a background Session does), acknowledged. A header
        // name on two lines: the repair must send them as the attempt did, not joined.
        let takenPath = "/bytes/\(3 << 20)?seed=61"
        try Self.create(1, path: takenPath, headerLines: ["X-Tag: first", "X-Tag: second"], on: &client, server: server)
        let first = try Self.untilComplete(1, on: &client)
        let handed = try #require(first.file)
        #expect(first.error == nil)
        #expect(link(handed, appFile.path) == 0)
        try client.send(.acknowledge(.init(session: Self.identifier, through: first.through)))
        // Task 2: handed over, never acknowledged (the app was cut off with the machine).
        try Self.create(2, path: "/bytes/\(1 << 20)?seed=62", on: &client, server: server)
        let second = try Self.untilComplete(2, on: &client)
        #expect(second.error == nil)
        // Answered after the acknowledgement: it is journaled.
        _ = try client.tasks(of: Self.identifier) { _ in true }
        client.close()
        daemon.kill()

        // Neither was flushed: courierd's name of the acknowledged file stays until it is.
        let unflushed = try Self.unflushedFiles(of: daemon)
        #expect(unflushed.map(\.task).sorted() == [1, 2], "\(unflushed)")
        #expect(unflushed.first { $0.task == 1 }?.acknowledged == true)
        #expect(FileManager.default.fileExists(atPath: handed))
        // The power cut: no byte of either was written back (the app's link is the same file).
        for file in unflushed {
            #expect(truncate(file.path, 0) == 0)
        }
        // Sizes, not contents: FoundationEssentials' readBytesFromFile leaks its 4 KiB buffer on an empty file
        // (LeakSanitizer), and the file is empty here.
        #expect(Self.size(of: appFile) == 0)

        daemon.environment["COURIER_BOOT_ID"] = "boot-after"
        daemon.extraArguments = ["--retry-delay", "0.2"]
        try daemon.start()
        // The app's copy is whole again, in place.
        let deadline = Date().addingTimeInterval(20)
        while Self.size(of: appFile) != taken.count || FileManager.default.contents(atPath: appFile.path) != taken,
            Date() < deadline
        {
            usleep(50_000)
        }
        #expect(FileManager.default.contents(atPath: appFile.path) == taken, "the app's file was not fetched again")
        // Fetched again as the task's attempt was: its header lines as they were, in order.
        let fetches = server.requests.filter { $0.uri == takenPath }
        #expect(fetches.count == 2, "\(fetches.map(\.uri))")
        for fetch in fetches {
            #expect(fetch.headers.filter { $0.0.lowercased() == "x-tag" }.map(\.1) == ["first", "second"])
        }
        // The task the app had not acknowledged ran again: it hears of it once more, with the server's bytes.
        (client, _) = try Client.opening(Self.session, on: daemon)
        let again = try Self.untilComplete(2, on: &client)
        let replayed = try #require(again.file)
        #expect(again.error == nil)
        #expect(FileManager.default.contents(atPath: replayed) == untaken)
        try client.send(.acknowledge(.init(session: Self.identifier, through: again.through)))
        _ = try client.tasks(of: Self.identifier) { _ in true }
        client.close()
        // A clean stop flushes what is left: nothing unflushed, courierd's name of the repaired file gone.
        #expect(daemon.stop() == .exited(0))
        #expect(try Self.unflushedFiles(of: daemon).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: handed))
        #expect(FileManager.default.contents(atPath: appFile.path) == taken)
        try await server.shutdown()
    }

    @Test("killed in the same boot, courierd trusts and flushes the files it handed over; a clean stop flushes all")
    func killWithoutPowerCut() async throws {
        let server = try await TestServer.start()
        let daemon = Self.daemonHoldingFlushes(boot: "one-boot")
        defer { daemon.cleanup() }
        try daemon.start()
        var (client, _) = try Client.opening(Self.session, on: daemon)
        try Self.create(1, path: "/bytes/\(2 << 20)?seed=63", on: &client, server: server)
        let first = try Self.untilComplete(1, on: &client)
        let handed = try #require(first.file)
        try client.send(.acknowledge(.init(session: Self.identifier, through: first.through)))
        _ = try client.tasks(of: Self.identifier) { _ in true }
        client.close()
        daemon.kill()
        #expect(try Self.unflushedFiles(of: daemon).map(\.path) == [handed])

        // Same boot: the bytes are in the page cache, courierd flushes them (the acknowledged file then goes).
        daemon.extraArguments = ["--retry-delay", "0.2"]
        try daemon.start()
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: handed), Date() < deadline {
            usleep(50_000)
        }
        #expect(!FileManager.default.fileExists(atPath: handed))
        #expect(daemon.stop() == .exited(0))
        #expect(try Self.unflushedFiles(of: daemon).isEmpty)
        try await server.shutdown()
    }
}
