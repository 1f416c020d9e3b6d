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
@Suite("courierd process", .serialized)
struct DaemonProcessTests {
    /// A courierd running on fresh directories; `stop()` sends SIGTERM and returns how it ended.
    final class Daemon {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courierd-\(UUID().uuidString)")
        var runtime: URL { root.appendingPathComponent("run") }
        var state: URL { root.appendingPathComponent("state") }
        var socket: String { runtime.appendingPathComponent("courierd.sock").path }
        private var child: ChildProcess?

        static func executable() throws -> String {
            let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            let candidate = directory.appendingPathComponent("courierd").path
            guard FileManager.default.isExecutableFile(atPath: candidate) else {
                throw POSIXError(.ENOENT)
            }
            return candidate
        }

        /// A courierd process on this daemon's directories; its log goes to the test's standard error.
        func launch() throws -> ChildProcess {
            try ChildProcess(
                try Daemon.executable(),
                arguments: ["--runtime-directory", runtime.path, "--state-directory", state.path],
                environment: ProcessInfo.processInfo.environment,
                standardError: .inherit
            )
        }

        func start() throws {
            child = try launch()
            let deadline = Date().addingTimeInterval(10)
            while UnixSocket.connect(to: socket).map({ close($0) }) == nil {
                guard Date() < deadline else {
                    throw POSIXError(.ETIMEDOUT)
                }
                usleep(20_000)
            }
        }

        /// Sends SIGTERM and waits for the end; the directories stay for the test to look at.
        func stop() -> ChildProcess.Termination? {
            child?.send(SIGTERM)
            return child?.wait(timeout: .seconds(10))
        }

        /// Stops the daemon if it still runs, and removes its directories.
        func cleanup() {
            _ = stop()
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// A client connection speaking frames.
    struct Client {
        let descriptor: Int32
        var decoder = IPCFrameDecoder()

        init(_ path: String) throws {
            guard let descriptor = UnixSocket.connect(to: path) else {
                throw POSIXError(.ECONNREFUSED)
            }
            self.descriptor = descriptor
        }

        func send(_ message: IPCMessage) throws {
            #expect(UnixSocket.write(try message.frame().encoded, to: descriptor))
        }

        func sendRaw(_ bytes: [UInt8]) {
            #expect(UnixSocket.write(Data(bytes), to: descriptor))
        }

        /// The next message, or nil when the daemon closed the connection.
        mutating func receive() throws -> IPCMessage? {
            while true {
                let bytes = UnixSocket.read(from: descriptor)
                if bytes.isEmpty {
                    return nil
                }
                if let frame = try decoder.feed(bytes).first {
                    return try IPCMessage(frame: frame)
                }
            }
        }

        func close() {
            _ = Glibc.close(descriptor)
        }
    }

    static let open = IPCMessage.openSession(.init(request: 1, identifier: "com.example.podcasts.bg"))

    @Test("hello, a session, its tasks; transfers refused until the daemon runs them; SIGTERM stops it cleanly")
    func conversation() throws {
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        var client = try Client(daemon.socket)
        try client.send(.hello(.init(app: "com.example.podcasts", pid: getpid())))
        #expect(try client.receive() == .welcome(.init(daemonVersion: DaemonServer.version)))
        try client.send(Self.open)
        #expect(try client.receive() == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 1))))
        try client.send(.listTasks(.init(request: 2, session: "com.example.podcasts.bg")))
        #expect(try client.receive() == .reply(.init(request: 2, result: .tasks(snapshots: []))))
        let task = IPCMessage.BackgroundTask(
            identifier: 1,
            kind: .download,
            request: CodableRequest(URLRequest(url: URL(string: "http://127.0.0.1:9/x")!))
        )
        try client.send(.createTask(.init(request: 3, session: "com.example.podcasts.bg", task: task)))
        guard case .failure(let failure)? = try client.receive() else {
            Issue.record("createTask was not refused")
            return
        }
        #expect(failure.request == 3)
        #expect(failure.error.code == .unsupportedInBackgroundSession)

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
        #expect(try client.receive() == .welcome(.init(daemonVersion: DaemonServer.version)))
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
        #expect(try client.receive() == .welcome(.init(daemonVersion: DaemonServer.version)))
        client.close()
    }
}
