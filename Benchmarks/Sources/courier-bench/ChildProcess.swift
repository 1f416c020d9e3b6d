import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A program started with `posix_spawn` in a process group of its own (so that a hung client and what it started can be
/// killed together), its standard output and error sent to files.
struct ChildProcess {
    let pid: pid_t

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

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))

        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw HarnessError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    /// Waits for the exit; throws if the program did not exit with status 0. With `deadline`, a program still running
    /// after it is killed with its process group (SIGKILL) and reaped, and this throws: a hung client is a failure,
    /// never waited on.
    func wait(deadline: Duration? = nil) throws {
        var status: Int32 = 0
        if let deadline {
            let end = ContinuousClock.now + deadline
            while true {
                let reaped = waitpid(pid, &status, WNOHANG)
                if reaped == pid {
                    break
                }
                guard reaped == 0 || errno == EINTR else {
                    throw HarnessError("waitpid(\(pid)): \(String(cString: strerror(errno)))")
                }
                if ContinuousClock.now >= end {
                    kill(-pid, SIGKILL)
                    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                    throw HarnessError("did not finish within \(deadline): killed")
                }
                usleep(10_000)
            }
        } else {
            while waitpid(pid, &status, 0) < 0 {
                guard errno == EINTR else {
                    throw HarnessError("waitpid(\(pid)): \(String(cString: strerror(errno)))")
                }
            }
        }
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            throw HarnessError(exited ? "exit status \(code)" : "killed by signal \(status & 0x7f)")
        }
    }

    func signal(_ signal: Int32) {
        kill(pid, signal)
    }
}

/// A harness failure, with a message for the terminal.
struct HarnessError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
