import BenchClientKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A courierd of this run's own: its socket in a private runtime directory, its journal and files in a private
/// state directory, started as a child of this process and stopped (SIGTERM) at the end of the run, both
/// directories deleted.
///
/// This process's `XDG_RUNTIME_DIR` and `XDG_STATE_HOME` point at the same two directories, which is where a
/// background session looks for its daemon. Because courierd is this process's child and is waited for, its CPU
/// time is part of the run's CPU time as `bench-launch` reads it from `wait4`, and its peak resident set counts
/// as well (the larger of the two peaks, not their sum).
final class PrivateDaemon {
    let pid: pid_t
    /// `$XDG_RUNTIME_DIR` (socket, lock and courierd's log are in its `courier` folder).
    let runtimeRoot: URL
    /// `$XDG_STATE_HOME` (journal, staging, downloads are in its `courier` folder).
    let stateRoot: URL
    private var stopped = false

    var log: URL { runtimeRoot.appendingPathComponent("courierd.log") }
    var socket: URL { runtimeRoot.appendingPathComponent("courier/courierd.sock") }

    /// Starts courierd and waits (up to `timeout`) until its socket accepts a connection. The state directory is
    /// made under `stateParent`: on the file system of the downloads, so that handing a finished file to the
    /// session is a hard link, as it is for an app whose state and cache directories share a disk. `maxTransfers`:
    /// courierd's `--max-transfers`, the workload's number in flight (the in-process clients run as many).
    init(stateParent: URL, maxTransfers: Int, timeout: TimeInterval = 10) throws {
        let executable = try Self.executable()
        // The runtime directory holds a Unix socket, whose path may not exceed 107 bytes: keep it short.
        runtimeRoot = try Self.makeTemporaryDirectory(in: URL(fileURLWithPath: "/tmp"), prefix: "courier-bg-run")
        do {
            stateRoot = try Self.makeTemporaryDirectory(in: stateParent, prefix: "courier-bg-state")
        } catch {
            try? FileManager.default.removeItem(at: runtimeRoot)
            throw error
        }
        setenv("XDG_RUNTIME_DIR", runtimeRoot.path, 1)
        setenv("XDG_STATE_HOME", stateRoot.path, 1)
        // The session reads them through ProcessInfo; refuse to go on if it would not see them (it would start a
        // courierd of its own in this user's usual place).
        let environment = ProcessInfo.processInfo.environment
        guard environment["XDG_RUNTIME_DIR"] == runtimeRoot.path, environment["XDG_STATE_HOME"] == stateRoot.path
        else {
            Self.remove([runtimeRoot, stateRoot])
            throw TransferFailed(url: runtimeRoot, reason: "ProcessInfo does not see XDG_RUNTIME_DIR set by setenv")
        }
        pid = try Self.spawn(
            [
                executable,
                "--runtime-directory", runtimeRoot.appendingPathComponent("courier").path,
                "--state-directory", stateRoot.appendingPathComponent("courier").path,
                "--max-transfers", String(maxTransfers),
            ],
            log: runtimeRoot.appendingPathComponent("courierd.log").path
        )
        let deadline = Date().addingTimeInterval(timeout)
        while !Self.accepts(socket.path) {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                stopped = true
                let said = logTail()
                Self.remove([runtimeRoot, stateRoot])
                throw TransferFailed(url: runtimeRoot, reason: "courierd exited at start (status \(status)):\n\(said)")
            }
            guard Date() < deadline else {
                let said = logTail()
                _ = stop()
                throw TransferFailed(url: runtimeRoot, reason: "courierd did not listen within \(Int(timeout)) s:\n\(said)")
            }
            usleep(5_000)
        }
    }

    deinit {
        _ = stop()
    }

    /// What courierd cost, as `wait4` reports it.
    struct Usage {
        var cpu: Double
        var peakRSS: Int
    }

    /// SIGTERM, waits for the exit (SIGKILL after `timeout`), deletes both directories. Nil if it had stopped
    /// already.
    @discardableResult
    func stop(timeout: TimeInterval = 10) -> Usage? {
        guard !stopped else {
            return nil
        }
        stopped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var usage = rusage()
        let deadline = Date().addingTimeInterval(timeout)
        var killed = false
        while true {
            let waited = wait4(pid, &status, WNOHANG, &usage)
            if waited == pid || (waited < 0 && errno != EINTR) {
                break
            }
            if !killed && Date() >= deadline {
                FileHandle.standardError.write(
                    Data("bench-courier-bg: courierd did not stop within \(Int(timeout)) s of SIGTERM; SIGKILL\n".utf8))
                kill(pid, SIGKILL)
                killed = true
            }
            usleep(2_000)
        }
        Self.remove([runtimeRoot, stateRoot])
        let cpu =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) * 1e-6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) * 1e-6
        return Usage(cpu: cpu, peakRSS: usage.ru_maxrss * 1024)
    }

    /// The end of courierd's log, for an error message.
    func logTail() -> String {
        String(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(2000))
    }

    /// courierd: `$COURIERD`, else beside this executable, else on PATH (the order a background session uses).
    private static func executable() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["COURIERD"], FileManager.default.isExecutableFile(atPath: explicit) {
            return explicit
        }
        let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("courierd").path
        if FileManager.default.isExecutableFile(atPath: beside) {
            return beside
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(directory)/courierd"
            if FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        throw TransferFailed(
            url: URL(fileURLWithPath: "courierd"),
            reason: "no courierd executable: set COURIERD (run.sh builds it with the root package)")
    }

    private static func makeTemporaryDirectory(in parent: URL, prefix: String) throws -> URL {
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        var template = Array(parent.appendingPathComponent("\(prefix)-XXXXXX").path.utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TransferFailed(url: parent, reason: "mkdtemp: \(String(cString: strerror(errno)))")
        }
        // mkdtemp makes it 0700, which courierd requires of the folders it creates inside.
        return URL(fileURLWithPath: String(cString: made))
    }

    private static func remove(_ folders: [URL]) {
        for folder in folders {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// Starts `arguments` with standard input from /dev/null and standard output and error appended to `log`.
    private static func spawn(_ arguments: [String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") }
        let envp = variables + [nil]
        defer { variables.forEach { free($0) } }
        // The spawning thread's signal mask and this process's ignored signals would be inherited: courierd starts
        // with none blocked and SIGTERM and SIGINT at their defaults (it installs its own handling).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw TransferFailed(
                url: URL(fileURLWithPath: arguments[0]), reason: "cannot start: \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// True when a connection to the Unix socket at `path` succeeds.
    private static func accepts(_ path: String) -> Bool {
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return false
        }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            return false
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}
