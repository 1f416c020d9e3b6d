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

/// The real `courierd` executable, started as its own process on private directories: the conversation, hostile
/// frames, one daemon per user, and a clean stop on SIGTERM.
@Suite("courierd process", .blockingWaits, .serialized)
struct DaemonProcessTests {
    static let open = IPCMessage.openSession(.init(request: 1, identifier: "com.example.podcasts.bg"))

    @Test("hello, a session, its tasks; tasks that break the background rules refused; SIGTERM stops it cleanly")
    func conversation() throws {
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var client = try Client(daemon.socket)
        try client.send(.hello(.init(app: "com.example.podcasts", pid: getpid())))
        guard case .welcome(let welcome)? = try client.receive() else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome.daemonVersion == DaemonServer.version)
        #expect(welcome.executable == URL(fileURLWithPath: try Daemon.executable()).resolvingSymlinksInPath().path)
        #expect(welcome.stateDirectory == daemon.state.path)
        #expect(welcome.runtimeDirectory == daemon.paths.runtimeDirectory.path)
        try client.send(Self.open)
        #expect(try client.receive() == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 1))))
        try client.send(.listTasks(.init(request: 2, session: "com.example.podcasts.bg")))
        #expect(try client.receive() == .reply(.init(request: 2, result: .tasks(snapshots: []))))
        // Background rules: HTTP(S) only; uploads from a file that exists.
        let ftp = IPCMessage.BackgroundTask(
            identifier: 1,
            kind: .download,
            request: TaskRequest(URLRequest(url: URL(string: "ftp://127.0.0.1/x")!))
        )
        try client.send(.createTask(.init(request: 3, session: "com.example.podcasts.bg", task: ftp)))
        guard case .failure(let failure)? = try client.receive() else {
            Issue.record("an ftp task was not refused")
            return
        }
        #expect(failure.request == 3)
        #expect(failure.error.code == .unsupportedURL)
        let upload = IPCMessage.BackgroundTask(
            identifier: ftp.identifier,
            kind: .upload,
            request: TaskRequest(URLRequest(url: URL(string: "http://127.0.0.1:9/upload")!)),
            uploadFile: daemon.root.appendingPathComponent("missing").path
        )
        try client.send(.createTask(.init(request: 4, session: "com.example.podcasts.bg", task: upload)))
        guard case .failure(let missing)? = try client.receive() else {
            Issue.record("an upload of a missing file was not refused")
            return
        }
        #expect(missing.error.code == .fileDoesNotExist)
        try client.send(.listTasks(.init(request: 5, session: "com.example.podcasts.bg")))
        #expect(try client.receive() == .reply(.init(request: 5, result: .tasks(snapshots: []))))

        // One live session per identifier: a second client is refused while the first holds it.
        var second = try Client(daemon.socket)
        try second.send(.hello(.init(app: "com.example.podcasts", pid: getpid())))
        _ = try second.receive()
        try second.send(Self.open)
        guard case .failure(let inUse)? = try second.receive() else {
            Issue.record("a second open of the same session was not refused")
            return
        }
        #expect(inUse.error.code == .backgroundSessionInUse)
        client.close()
        second.close()

        #expect(daemon.stop() == .exited(0))
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }

    @Test(
        "a hostile frame closes that connection with a failure; the daemon goes on serving others",
        arguments: [
            [0xFF, 0xFF, 0xFF, 0xFF, 0, 1, 0, 1] as [UInt8],  // 4 GiB announced
            [0, 0, 0, 2, 0, 9, 0, 1],  // version 9
            [0, 0, 0, 2, 0, 1, 0x03, 0xE7, 0x7B, 0x7D],  // type 999
            [0, 0, 0, 3, 0, 1, 0, 1, 0x5B, 0x31, 0x5D],  // hello with a JSON array
            [0, 0, 0, 2, 0, 1, 0, 7, 0x7B, 0x7D],  // acknowledge before hello
        ]
    )
    func hostileFrames(bytes: [UInt8]) throws {
        let daemon = Daemon()
        try daemon.start()
        defer { daemon.cleanup() }
        var hostile = try Client(daemon.socket)
        hostile.sendRaw(bytes)
        var sawEnd = false
        for _ in 0..<2 {
            guard let message = try? hostile.receive() else {
                sawEnd = true
                break
            }
            if case .failure = message {
                continue
            }
            Issue.record("unexpected answer to a hostile frame: \(message)")
        }
        #expect(sawEnd, "the connection stayed open")
        hostile.close()
        var client = try Client(daemon.socket)
        try client.send(.hello(.init(app: "a", pid: getpid())))
        #expect(try Self.isWelcome(client.receive()))
        client.close()
    }

    @Test(
        "protocol versions: an app of an earlier Courier is written JSON, a current one the record format; each frame is read by the version it says",
        arguments: [nil, IPCFrame.jsonVersion, IPCFrame.recordVersion]
    )
    func protocolVersions(appReads newest: UInt16?) throws {
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var client = try Client(daemon.socket)
        try client.send(.hello(.init(app: "com.example.podcasts", pid: getpid(), protocolVersion: newest)))
        guard case .welcome(let welcome)? = try client.receive() else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome.protocolVersion == IPCFrame.recordVersion)
        // The client writes the newest both read from now on, as DaemonConnection does after the welcome.
        client.writeVersion = IPCFrame.version(toWriteFor: min(welcome.protocolVersion, newest ?? 1))
        try client.send(Self.open)
        #expect(try client.receive() == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 1))))
        try client.send(.listTasks(.init(request: 2, session: "com.example.podcasts.bg")))
        #expect(try client.receive() == .reply(.init(request: 2, result: .tasks(snapshots: []))))
        let expected: UInt16 = newest == IPCFrame.recordVersion ? 2 : 1
        #expect(client.versionsReceived == [expected])
        client.close()
    }

    @Test("a second courierd of the same user exits with status 3 and leaves the first running")
    func oneDaemon() throws {
        let daemon = Daemon()
        try daemon.start()
        defer { daemon.cleanup() }
        #expect(try daemon.launch().wait(timeout: .seconds(10)) == .exited(3))
        var client = try Client(daemon.socket)
        try client.send(.hello(.init(app: "a", pid: getpid())))
        #expect(try Self.isWelcome(client.receive()))
        client.close()
    }

    static func isWelcome(_ message: IPCMessage?) -> Bool {
        if case .welcome(let welcome)? = message { welcome.daemonVersion == DaemonServer.version } else { false }
    }
}
