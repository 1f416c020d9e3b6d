import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An executable built beside the test bundle (courierd, BackgroundProbe).
func siblingExecutable(_ name: String) throws -> String {
    let directory = ThisExecutable.url.deletingLastPathComponent()
    let candidate = directory.appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw POSIXError(.ENOENT)
    }
    return candidate
}

/// A courierd running on fresh directories; `stop()` sends SIGTERM and returns how it ended, `kill()` SIGKILLs it.
final class Daemon {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("courierd-\(UUID().uuidString)")
    let runtime: URL
    let state: URL
    var socket: String { runtime.appendingPathComponent("courierd.sock").path }
    var paths: DaemonPaths { DaemonPaths(runtimeDirectory: runtime, stateDirectory: state) }
    /// Arguments added to every launch (`--retry-delay 0.2`).
    var extraArguments: [String]
    var environment: [String: String]
    /// A command courierd runs under (`ip netns exec NAME`: a network namespace of the test's own), or none.
    var launchPrefix: [String] = []
    private var child: ChildProcess?

    /// The test's environment without a session bus (no test shows notifications on the desktop of whoever runs
    /// it), then `environment`. The directories are where `$XDG_RUNTIME_DIR` and `$XDG_STATE_HOME` under the root
    /// point, and courierd, the apps it launches and every `courier` run get those variables: whatever in them looks
    /// for courierd where a user's would be (`DaemonPaths.current`: an application's link for fetch and pushes, the
    /// CLI) finds this one, never the user's real directories.
    init(arguments: [String] = [], environment: [String: String] = [:]) {
        extraArguments = arguments
        runtime = root.appendingPathComponent("xdg-run/courier")
        state = root.appendingPathComponent("xdg-state/courier")
        var base = ProcessInfo.processInfo.environment
        base["DBUS_SESSION_BUS_ADDRESS"] = nil
        base["XDG_RUNTIME_DIR"] = root.appendingPathComponent("xdg-run").path
        base["XDG_STATE_HOME"] = root.appendingPathComponent("xdg-state").path
        self.environment = base.merging(environment) { $1 }
    }

    /// The process the last `start()` launched, while it runs.
    var pid: pid_t? {
        child?.pid
    }

    /// The environment of an app or a `courier` run against this daemon (the daemon's own).
    var clientEnvironment: [String: String] {
        environment
    }

    static func executable() throws -> String {
        try siblingExecutable("courierd")
    }

    /// A courierd process on this daemon's directories; its log goes to the test's standard error.
    func launch() throws -> ChildProcess {
        let command =
            launchPrefix + [
                try Daemon.executable(), "--runtime-directory", runtime.path, "--state-directory", state.path,
            ]
            + extraArguments
        return try ChildProcess(
            command[0],
            arguments: Array(command.dropFirst()),
            environment: environment,
            standardError: .inherit
        )
    }

    /// Starts courierd and waits until its socket answers (30 s: a journal of hundreds of tasks on a loaded machine);
    /// throws `ECHILD` at once when it ends first (it could not start).
    func start() throws {
        child = try launch()
        let deadline = Date().addingTimeInterval(30)
        while UnixSocket.connect(to: socket).map({ close($0) }) == nil {
            guard Date() < deadline else {
                throw POSIXError(.ETIMEDOUT)
            }
            if child?.wait(timeout: .zero) != nil {
                child = nil
                throw POSIXError(.ECHILD)
            }
            usleep(20_000)
        }
    }

    /// Sends SIGTERM and waits for the end; the directories stay for the test to look at.
    func stop() -> ChildProcess.Termination? {
        child?.send(SIGTERM)
        defer { child = nil }
        return child?.wait(timeout: .seconds(20))
    }

    /// SIGKILL: no checkpoint, no cleanup, the socket file stays (it refuses connections until the next courierd
    /// replaces it; unlinking it here could remove the socket of a courierd a session started meanwhile).
    func kill() {
        child?.send(SIGKILL)
        _ = child?.wait(timeout: .seconds(10))
        child = nil
    }

    /// SIGKILLs the courierd that answers on the socket, whoever started it (the test, or a background session that
    /// found none), and waits for it to be gone.
    func killServing() {
        guard let descriptor = UnixSocket.connect(to: socket) else {
            return
        }
        let pid = PeerCredentials.of(socket: descriptor)?.pid
        close(descriptor)
        kill()
        if let pid, pid > 0 {
            Glibc.kill(pid, SIGKILL)
            let deadline = Date().addingTimeInterval(10)
            // A zombie is gone: a courierd started by an app is its shell's child, reparented to PID 1, which in a
            // container may reap it late.
            while Glibc.kill(pid, 0) == 0, ProcessState.of(pid) != "Z", Date() < deadline {
                usleep(10_000)
            }
        }
        // The socket file stays: a courierd started meanwhile (by a session reconnecting) may have bound a new one at
        // the same path, and a dead one only refuses connections until the next courierd replaces it.
    }

    /// Stops the daemon if it still runs, and whichever other courierd serves its socket, and removes its
    /// directories (the state directory first: a background session still alive then reconnects, but starts no
    /// courierd without it).
    func cleanup() {
        try? FileManager.default.removeItem(at: state)
        _ = stop()
        killServing()
        // The apps courierd launched on these directories (their command lines name them): one that suspended itself
        // would stay stopped once its courierd is gone.
        _ = try? ChildProcess.run(
            "/usr/bin/pkill",
            arguments: ["-KILL", "-f", root.path],
            environment: ProcessInfo.processInfo.environment,
            timeout: .seconds(10)
        )
        try? FileManager.default.removeItem(at: root)
    }
}

/// A client connection speaking frames. Reads time out after 20 seconds (a hung daemon fails the test, it does not
/// hang it).
/// Whether the file at `path` is gone within `timeout` seconds (courierd deletes an acknowledged download once its
/// flush batch is on disk, a moment after the acknowledgement).
func eventuallyGone(_ path: String, timeout: TimeInterval = 10) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while FileManager.default.fileExists(atPath: path), Date() < deadline {
        usleep(20_000)
    }
    return !FileManager.default.fileExists(atPath: path)
}

struct Client {
    let descriptor: Int32
    var decoder = IPCFrameDecoder()
    private var queued: [IPCMessage] = []
    /// The protocol versions of the frames received (courierd writes the newest both sides read).
    private(set) var versionsReceived: Set<UInt16> = []
    /// The version this client writes in.
    var writeVersion = IPCFrame.jsonVersion
    private var nextRequest: UInt64 = 100

    init(_ path: String) throws {
        guard let descriptor = UnixSocket.connect(to: path) else {
            throw POSIXError(.ECONNREFUSED)
        }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.descriptor = descriptor
    }

    /// Connects to the courierd at `socket` as the `courier` tool does, to look (list tasks, sessions): hello, welcome.
    static func looking(at socket: String) throws -> Client {
        var client = try Client(socket)
        try client.send(.hello(.init(app: "courier", pid: getpid())))
        _ = try client.receive()
        return client
    }

    /// Connects, says hello as `app` (in the foreground unless told), and opens `session`; returns the client and the
    /// open's answer.
    static func opening(
        _ session: IPCMessage.OpenSession,
        on daemon: Daemon,
        app: String = "com.example.podcasts",
        inForeground: Bool? = nil
    ) throws -> (Client, IPCMessage?) {
        var client = try Client(daemon.socket)
        try client.send(.hello(.init(app: app, pid: getpid(), inForeground: inForeground)))
        _ = try client.receive()
        try client.send(.openSession(session))
        // The answer first: the client returned must be the one that read it (a struct copy taken before would lose
        // whatever the same read brought along).
        let answer = try client.receiveAnswer(to: session.request)
        return (client, answer)
    }

    func send(_ message: IPCMessage) throws {
        #expect(UnixSocket.write(try message.frame(version: writeVersion).encoded, to: descriptor))
    }

    func sendRaw(_ bytes: [UInt8]) {
        #expect(UnixSocket.write(Data(bytes), to: descriptor))
    }

    /// The next message, or nil when the daemon closed the connection (or said nothing for 20 seconds).
    mutating func receive() throws -> IPCMessage? {
        while queued.isEmpty {
            let bytes = UnixSocket.read(from: descriptor)
            if bytes.isEmpty {
                return nil
            }
            for frame in try decoder.feed(bytes) {
                versionsReceived.insert(frame.version)
                queued.append(try IPCMessage(frame: frame))
            }
        }
        return queued.removeFirst()
    }

    /// Events that arrived while waiting for an answer.
    private(set) var events: [IPCMessage.Events] = []

    /// The reply or failure for `request`; event frames that come first are kept in ``events``.
    mutating func receiveAnswer(to request: UInt64) throws -> IPCMessage? {
        while let message = try receive() {
            switch message {
            case .events(let batch):
                events.append(batch)
            case .reply(let reply) where reply.request == request:
                return message
            case .failure(let failure) where failure.request == request || failure.request == nil:
                return message
            default:
                continue
            }
        }
        return nil
    }

    /// Sends a request and returns its answer.
    mutating func request(_ make: (UInt64) -> IPCMessage) throws -> IPCMessage? {
        nextRequest += 1
        try send(make(nextRequest))
        return try receiveAnswer(to: nextRequest)
    }

    /// The session's task list once `ready` holds for it (a task's waiting reason is set when courierd has looked at
    /// the conditions, a moment after `createTask` was answered), or the last list after `timeout`.
    mutating func tasks(
        of session: String,
        timeout: TimeInterval = 10,
        until ready: ([IPCMessage.TaskSnapshot]) -> Bool
    ) throws -> [IPCMessage.TaskSnapshot] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            var failure: String?
            let snapshots = try IPCMessage.ListTasks.allPages { offset, limit in
                let answer = try request {
                    .listTasks(.init(request: $0, session: session, offset: offset, limit: limit))
                }
                guard case .reply(let reply)? = answer, case .tasks(let page) = reply.result else {
                    failure = String(describing: answer)
                    return []
                }
                return page
            }
            if let failure {
                Issue.record("no task list: \(failure)")
                return []
            }
            if ready(snapshots) || Date() >= deadline {
                return snapshots
            }
            usleep(20_000)
        }
    }

    /// The next batch of events (a kept one first).
    mutating func nextBatch() throws -> IPCMessage.Events? {
        if !events.isEmpty {
            return events.removeFirst()
        }
        while let message = try receive() {
            if case .events(let batch) = message {
                return batch
            }
        }
        return nil
    }

    /// Collects events (the ones already kept first) until `done` says the last one arrived.
    mutating func events(
        until done: (IPCMessage.SequencedEvent) -> Bool
    ) throws -> [IPCMessage.SequencedEvent] {
        var collected: [IPCMessage.SequencedEvent] = []
        var batches = events
        events = []
        while true {
            for (index, batch) in batches.enumerated() {
                for (position, event) in batch.events.enumerated() {
                    collected.append(event)
                    if done(event) {
                        // What came after the last awaited event stays for the next call.
                        var rest = batch
                        rest.events = Array(batch.events[(position + 1)...])
                        events = (rest.events.isEmpty ? [] : [rest]) + batches[(index + 1)...]
                        return collected
                    }
                }
            }
            batches = []
            guard let message = try receive() else {
                return collected
            }
            if case .events(let batch) = message {
                batches = [batch]
            }
        }
    }

    /// Ends the connection as an app's death would, even while a child spawned by another test in this process
    /// still holds a copy of the descriptor (between its `clone` and its `closefrom`): courierd sees the hang-up now.
    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = Glibc.close(descriptor)
    }
}
