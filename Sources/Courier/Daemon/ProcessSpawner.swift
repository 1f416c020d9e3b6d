package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Starts a program without waiting for it (`posix_spawnp`): courierd started by a session, an app relaunched by
/// courierd. Every signal is back at its default and none is blocked in the child: a parent that ignores SIGCHLD or
/// SIGPIPE must not pass that on through exec.
package enum ProcessSpawner {
    /// Runs `arguments[0]` (looked up on `PATH` when it has no slash) with `arguments` and `environment`; returns its
    /// pid, or the `errno` of the failure.
    package static func spawn(_ arguments: [String], environment: [String: String]) -> Result<pid_t, POSIXError> {
        guard let executable = arguments.first else {
            return .failure(POSIXError(.ENOENT))
        }
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
        let result = posix_spawnp(&pid, executable, nil, &attributes, argv, envp)
        guard result == 0 else {
            return .failure(POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL))
        }
        return .success(pid)
    }
}
