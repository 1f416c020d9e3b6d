import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What one finished child process cost, read from `wait4`: its own CPU time and peak RSS, not the harness's.
struct Measurement: Sendable, Codable {
    /// Seconds from spawn to exit.
    var wall: Double
    /// User plus system CPU seconds.
    var cpu: Double
    /// Peak resident set, bytes.
    var peakRSS: Int
}

/// A program started with `posix_spawn`, its standard output and error sent to files.
struct ChildProcess {
    let pid: pid_t
    let started: ContinuousClock.Instant

    /// Starts `arguments[0]` (a path, or a name looked up on PATH) with `arguments`.
    init(_ arguments: [String], stdout: String, stderr: String, environment: [String: String]? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") }
        let envp = variables + [nil]
        defer { variables.forEach { free($0) } }

        var pid: pid_t = 0
        started = .now
        let status = posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
        guard status == 0 else {
            throw HarnessError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    /// Waits for the exit; throws if the program did not exit with status 0.
    func wait() throws -> Measurement {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else {
                throw HarnessError("wait4(\(pid)): \(String(cString: strerror(errno)))")
            }
        }
        let wall = ContinuousClock.now - started
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            throw HarnessError(exited ? "exit status \(code)" : "killed by signal \(status & 0x7f)")
        }
        return Measurement(
            wall: Double(wall.components.seconds) + Double(wall.components.attoseconds) * 1e-18,
            cpu: usage.ru_utime.seconds + usage.ru_stime.seconds,
            peakRSS: usage.ru_maxrss * 1024
        )
    }

    func signal(_ signal: Int32) {
        kill(pid, signal)
    }
}

extension timeval {
    fileprivate var seconds: Double { Double(tv_sec) + Double(tv_usec) * 1e-6 }
}

/// A harness failure, with a message for the terminal.
struct HarnessError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
