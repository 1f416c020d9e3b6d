import CourierConcurrency
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

    /// The variable naming the descriptor on which a started courierd says that it listens (`sd_notify`'s
    /// `READY=1`, in a pipe): one byte, then the pipe is closed.
    package static let readinessVariable = "COURIERD_READY_FD"

    /// How long ``start(_:timeout:environment:)`` waits by default for a started courierd to say it listens.
    package static let startTimeout: TimeInterval = 10

    /// Starts courierd for `paths` and waits (up to `timeout`) until it says it listens; returns a descriptor
    /// connected to its socket. `environment` is where `$COURIERD` is looked up, and courierd's.
    package static func start(
        _ paths: DaemonPaths,
        timeout: TimeInterval = startTimeout,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<Int32, CourierError> {
        guard let executable = executable(environment: environment) else {
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
        // courierd says it listens by writing to this pipe (then closes it); it closes it without a word when it
        // stops at start (another courierd holds the lock, or it cannot start at all).
        var ready: [Int32] = [-1, -1]
        guard pipe(&ready) == 0 else {
            let reason = String(cString: strerror(errno))
            return .failure(CourierError(.backgroundSessionWasDisconnected, "cannot start courierd: pipe: \(reason)"))
        }
        _ = fcntl(ready[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ready[1], F_SETFD, FD_CLOEXEC)
        defer { close(ready[0]) }
        var environment = environment
        environment["COURIERD_LOG"] = log
        environment[readinessVariable] = "\(ProcessSpawner.passedDescriptor)"
        let spawned = ProcessSpawner.spawn(arguments, environment: environment, passing: ready[1])
        close(ready[1])
        let pid: pid_t
        switch spawned {
        case .success(let started):
            pid = started
        case .failure(let error):
            return .failure(
                CourierError(.backgroundSessionWasDisconnected, "cannot start courierd: \(error.localizedDescription)")
            )
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let said = waitForReadiness(ready[0], timeout: timeout)
        // Ready: it listens. Closed without a word: it stopped at start, maybe because another courierd, started by
        // a racing session, holds the lock and is the one to connect to.
        if said != nil, let descriptor = UnixSocket.connect(to: paths.socket.path) {
            return .success(descriptor)
        }
        if said == false {
            return .failure(
                CourierError(.backgroundSessionWasDisconnected, "courierd stopped as it started (its log: \(log))")
            )
        }
        return .failure(
            CourierError(
                .backgroundSessionWasDisconnected,
                "courierd did not answer within \(Int(timeout)) s (its log: \(log))"
            )
        )
    }

    /// Waits for courierd's word on its readiness pipe: true when it said it listens, false when it closed the pipe
    /// without a word (it stopped), nil when it said nothing within `timeout`.
    private static func waitForReadiness(_ descriptor: Int32, timeout: TimeInterval) -> Bool? {
        let deadline = MonotonicDeadline(after: timeout)
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let answered = poll(&entry, 1, Int32(min(deadline.remaining * 1000, Double(Int32.max))))
            if answered < 0 && errno == EINTR {
                continue
            }
            guard answered > 0 else {
                return nil
            }
            var byte: UInt8 = 0
            let count = read(descriptor, &byte, 1)
            if count < 0 && errno == EINTR {
                continue
            }
            return count == 1
        }
    }
}
