import CSpawn
package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Starts a program without waiting for it (`posix_spawnp`): courierd started by a session, an app relaunched by
/// courierd. Every signal is back at its default and none is blocked in the child: a parent that ignores SIGCHLD or
/// SIGPIPE must not pass that on through exec. The child gets standard input, output and error only: every other
/// descriptor is closed in it, whether or not it was opened close-on-exec (an app relaunched by courierd must not hold
/// courierd's connections to servers, its journal or its socket).
package enum ProcessSpawner {
    /// Where the child finds the descriptor given with `passing`.
    package static let passedDescriptor: Int32 = 3

    /// Runs `arguments[0]` (looked up on `PATH` when it has no slash) with `arguments` and `environment`; returns its
    /// pid, or the `errno` of the failure.
    /// With `standardOutput` (`standardError`), the child's standard output (error) is that descriptor (this process
    /// keeps its own copy); with `quiet`, its standard error goes to `/dev/null` (a helper whose complaints would only
    /// clutter courierd's log); with `passing`, the child also gets that descriptor, as its descriptor 3 (courierd's
    /// readiness pipe).
    package static func spawn(
        _ arguments: [String],
        environment: [String: String],
        standardOutput: Int32? = nil,
        standardError: Int32? = nil,
        quiet: Bool = false,
        passing passed: Int32? = nil
    ) -> Result<pid_t, POSIXError> {
        guard let executable = arguments.first else {
            return .failure(POSIXError(.ENOENT))
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardOutput {
            posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        }
        if let standardError {
            posix_spawn_file_actions_adddup2(&actions, standardError, 2)
        } else if quiet {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        if let passed {
            // dup2 onto itself clears close-on-exec (glibc), so a descriptor that already is 3 is passed too.
            posix_spawn_file_actions_adddup2(&actions, passed, ProcessSpawner.passedDescriptor)
        }
        courier_spawn_close_from(&actions, passed == nil ? 3 : ProcessSpawner.passedDescriptor + 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        let result = posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            return .failure(POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL))
        }
        return .success(pid)
    }

    /// Runs `arguments` to the end and returns what it printed on its standard output (at most 64 KiB); nil when it
    /// cannot be started or has not finished within `timeout` (it is killed then). Its exit status is not read, its
    /// standard error is discarded.
    package static func output(
        of arguments: [String],
        environment: [String: String],
        timeout: TimeInterval = 2
    ) -> String? {
        // Close-on-exec, so that other children do not hold the write end open (pipe2 is hidden by Glibc's module
        // map; a child spawned by another thread between these lines could still inherit them).
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            return nil
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let spawned = spawn(arguments, environment: environment, standardOutput: ends[1], quiet: true)
        close(ends[1])
        defer { close(ends[0]) }
        guard case .success(let pid) = spawned else {
            return nil
        }
        var output: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var finished = false
        while output.count < 65_536 {
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            var poller = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, left) > 0 else {
                break
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(ends[0], &buffer, buffer.count)
            if count <= 0 {
                finished = count == 0
                break
            }
            output += buffer[0..<count]
        }
        if !finished {
            kill(pid, SIGKILL)
        }
        // Reaped here (or by the kernel, where this process ignores SIGCHLD: then waitpid fails with ECHILD).
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return finished ? String(decoding: output, as: UTF8.self) : nil
    }
}
