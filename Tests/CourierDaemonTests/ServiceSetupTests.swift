import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// courierd's footing on a real file system and real sockets: where it lives, that only one runs, and who may talk
/// to it.
@Suite("courierd paths, lock and peers", .blockingWaits)
struct ServiceSetupTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-service-\(UUID().uuidString)")
    }

    static let isRoot = getuid() == 0

    @Test("XDG variables place the socket and the journal; unset or relative ones fall back")
    func resolve() {
        let set = DaemonPaths.resolve(
            environment: ["XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/home/a/.state"],
            uid: 1000,
            home: "/home/a"
        )
        #expect(set.socket.path == "/run/user/1000/courier/courierd.sock")
        #expect(set.lockFile.path == "/run/user/1000/courier/courierd.lock")
        #expect(set.journal.path == "/home/a/.state/courier/journal.sqlite")
        let unset = DaemonPaths.resolve(environment: [:], uid: 1000, home: "/home/a")
        #expect(unset.socket.path == "/tmp/courier-1000/courierd.sock")
        #expect(unset.journal.path == "/home/a/.local/state/courier/journal.sqlite")
        let relative = DaemonPaths.resolve(
            environment: ["XDG_RUNTIME_DIR": "run", "XDG_STATE_HOME": "state"],
            uid: 7,
            home: "/h"
        )
        #expect(relative == DaemonPaths.resolve(environment: [:], uid: 7, home: "/h"))
    }

    @Test("prepare makes both directories 0700 and accepts them again")
    func prepare() throws {
        let root = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let paths = DaemonPaths(
            runtimeDirectory: root.appendingPathComponent("run/courier"),
            stateDirectory: root.appendingPathComponent("state/courier")
        )
        try paths.prepare()
        try paths.prepare()
        for directory in [paths.runtimeDirectory, paths.stateDirectory] {
            let mode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int
            #expect(mode == 0o700)
        }
    }

    @Test("a directory others can enter, a file, or a symlink in its place is refused")
    func unsafe() throws {
        let root = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let open = root.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        chmod(open.path, 0o755)
        let state = root.appendingPathComponent("state")
        let reason = "mode 755 lets others in (0700 expected)"
        let refusal = DaemonSetupError.unsafeDirectory(path: open.path, reason: reason)
        #expect(throws: refusal) {
            try DaemonPaths(runtimeDirectory: open, stateDirectory: state).prepare()
        }
        let link = root.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: state)
        #expect(throws: DaemonSetupError.unsafeDirectory(path: link.path, reason: "not a directory")) {
            try DaemonPaths(runtimeDirectory: link, stateDirectory: state).prepare()
        }
    }

    @Test("a directory owned by another user is refused", .enabled(if: ServiceSetupTests.isRoot))
    func foreignOwner() throws {
        let root = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let foreign = root.appendingPathComponent("foreign")
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
        chmod(foreign.path, 0o700)
        chown(foreign.path, 65534, 65534)
        #expect(throws: DaemonSetupError.unsafeDirectory(path: foreign.path, reason: "owned by uid 65534, not 0")) {
            try DaemonPaths(runtimeDirectory: foreign, stateDirectory: root.appendingPathComponent("s")).prepare()
        }
    }

    @Test("one lock holder at a time; the lock is free again once its holder is gone")
    func lock() throws {
        let root = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let path = root.appendingPathComponent("courierd.lock").path
        var first: InstanceLock? = try InstanceLock(path: path)
        #expect(throws: DaemonSetupError.alreadyRunning(lockFile: path)) { try InstanceLock(path: path) }
        #expect(first != nil)
        first = nil
        // A process another test is starting at this moment may hold a copy of the descriptor between its fork and
        // its exec (close-on-exec closes it only then): the lock is free once that copy is gone too.
        let deadline = Date().addingTimeInterval(5)
        var again: InstanceLock? = try? InstanceLock(path: path)
        while again == nil, Date() < deadline {
            usleep(10_000)
            again = try? InstanceLock(path: path)
        }
        #expect(again != nil)
    }

    @Test("the kernel names the peer of a socket: this process over a socket pair")
    func samePeer() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer {
            close(pair[0])
            close(pair[1])
        }
        let peer = try #require(PeerCredentials.of(socket: pair[0]))
        #expect(peer == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
        #expect(peer.isAdmitted(byDaemonOf: getuid()))
        #expect(PeerCredentials.of(socket: -1) == nil)
    }

    @Test("a client running as another uid is seen as that uid and refused", .enabled(if: ServiceSetupTests.isRoot))
    func otherUser() throws {
        let root = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        chmod(root.path, 0o755)
        let path = root.appendingPathComponent("s.sock").path
        let listener = try UnixSocket.listen(at: path)
        defer { close(listener) }
        chmod(path, 0o777)
        let client = try ChildProcess(
            "/usr/bin/setpriv",
            arguments: [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)", path,
            ],
            environment: ProcessInfo.processInfo.environment
        )
        let connection = accept(listener, nil, nil)
        try #require(connection >= 0)
        let peer = try #require(PeerCredentials.of(socket: connection))
        #expect(peer.uid == 65534)
        #expect(peer.pid == client.pid)
        #expect(!peer.isAdmitted(byDaemonOf: getuid()))
        close(connection)
        #expect(client.wait(timeout: .seconds(10)) == .exited(0))
    }

    @Test("a session starting courierd connects once it says it listens; one that stops at start is said at once")
    func launcherWaitsForReadiness() throws {
        let daemon = Daemon()
        defer { daemon.cleanup() }
        var environment = daemon.environment
        environment["COURIERD"] = try Daemon.executable()
        let began = Date()
        let descriptor = try DaemonLauncher.start(daemon.paths, environment: environment).get()
        let started = Date().timeIntervalSince(began)
        let peer = try #require(PeerCredentials.of(socket: descriptor))
        close(descriptor)
        #expect(ProcessState.of(peer.pid) != nil, "courierd \(peer.pid) answered")
        // A second start while one runs: the new courierd loses the lock and stops, and says nothing; the launcher
        // then connects to the one that runs, without waiting out its timeout.
        let again = Date()
        let second = try DaemonLauncher.start(daemon.paths, timeout: 20, environment: environment).get()
        #expect(PeerCredentials.of(socket: second)?.pid == peer.pid)
        close(second)
        #expect(Date().timeIntervalSince(again) < 10, "the losing start took \(Date().timeIntervalSince(again)) s")
        daemon.killServing()
        // Nothing answers on the socket any more (its file stays), whatever a loaded machine makes of the kill.
        let gone = Date().addingTimeInterval(10)
        while let open = UnixSocket.connect(to: daemon.socket), Date() < gone {
            close(open)
            usleep(20_000)
        }
        try #require(UnixSocket.connect(to: daemon.socket).map { close($0) } == nil, "courierd still answers")
        // A "courierd" that exits at once, before listening.
        let fake = daemon.root.appendingPathComponent("exits-at-once")
        try FileManager.default.createDirectory(at: daemon.root, withIntermediateDirectories: true)
        try "#!/bin/sh\nexit 3\n".write(to: fake, atomically: true, encoding: .utf8)
        chmod(fake.path, 0o755)
        environment["COURIERD"] = fake.path
        let failing = Date()
        let answer = DaemonLauncher.start(daemon.paths, timeout: 20, environment: environment)
        guard case .failure(let error) = answer else {
            Issue.record("a courierd that exits at once was connected to")
            return
        }
        #expect(error.message.contains("stopped as it started"), "\(error.message)")
        #expect(Date().timeIntervalSince(failing) < 10, "said after \(Date().timeIntervalSince(failing)) s, not at once")
        print("courierd started and answering in \(started) s")
    }
}
