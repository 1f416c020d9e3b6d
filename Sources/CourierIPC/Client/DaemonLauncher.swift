package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Starts courierd when no daemon answers on its socket (a background session created before anyone started it).
///
/// The daemon is found at `$COURIERD` if set, else beside this process's executable, else on `PATH`. It is started
/// detached (its own session, reparented to init by a shell that exits at once), with its log appended to
/// `courierd.log` in the runtime directory. Two racing starters are harmless: courierd's lock lets one run, the
/// other exits with status 3.
package enum DaemonLauncher {
    /// The courierd executable, or nil when there is none.
    package static func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit = environment["COURIERD"], FileManager.default.isExecutableFile(atPath: explicit) {
            return explicit
        }
        let beside = ThisExecutable.url.deletingLastPathComponent()
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
        return nil
    }

    /// Starts courierd for `paths` and waits (up to `timeout`) until its socket accepts a connection; returns the
    /// connected descriptor.
    package static func start(_ paths: DaemonPaths, timeout: TimeInterval = 10) -> Result<Int32, CourierError> {
        guard let executable = executable() else {
            return .failure(
                CourierError(
                    .backgroundSessionWasDisconnected,
                    "courierd is not running and no courierd executable was found (looked at $COURIERD, beside this "
                        + "program, and on PATH): build it with `swift build --product courierd` in this package "
                        + "(it lands beside the app), or install it with `courier daemon install`"
                )
            )
        }
        // The directories as courierd will want them (private, this user's): the log goes into one of them.
        do throws(DaemonSetupError) {
            try paths.prepare()
        } catch {
            return .failure(CourierError(.backgroundSessionWasDisconnected, "cannot start courierd: \(error)"))
        }
        let log = paths.runtimeDirectory.appendingPathComponent("courierd.log").path
        let script = "setsid \"$0\" \"$@\" </dev/null >/dev/null 2>>\"$COURIERD_LOG\" &"
        let arguments = [
            "/bin/sh", "-c", script, executable,
            "--runtime-directory", paths.runtimeDirectory.path, "--state-directory", paths.stateDirectory.path,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["COURIERD_LOG"] = log
        let pid: pid_t
        switch ProcessSpawner.spawn(arguments, environment: environment) {
        case .success(let spawned):
            pid = spawned
        case .failure(let error):
            return .failure(
                CourierError(.backgroundSessionWasDisconnected, "cannot start courierd: \(error.localizedDescription)")
            )
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let descriptor = UnixSocket.connect(to: paths.socket.path) {
                return .success(descriptor)
            }
            usleep(20_000)
        }
        return .failure(
            CourierError(
                .backgroundSessionWasDisconnected,
                "courierd did not answer within \(Int(timeout)) s (its log: \(log))"
            )
        )
    }
}
