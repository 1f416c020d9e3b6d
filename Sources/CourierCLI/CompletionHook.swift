import CourierConcurrency
import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `courier get --on-complete CMD`: a command run each time a download ends, as aria2's `--on-download-complete` and
/// BITS's notify command line. It runs as `/bin/sh -c CMD courier-hook FILE URL` (so `$1` is the saved file, empty
/// after a failure, and `$2` the URL) with `COURIER_RESULT` (`saved` or `failed`), `COURIER_FILE`, `COURIER_URL`,
/// `COURIER_ERROR` (a failure's message) and `COURIER_HTTP_STATUS` (when a response came) in its environment, its
/// output beside the command's. Once per download that ends (not for one interrupted to be continued), without waiting
/// for it; the command waits for every hook it started before it exits.
///
/// With `--background`, the hook is kept in `tool/hooks/TASK` of courierd's state directory until the download ends,
/// and the `courier` that hears of the end (this command with `--wait`, or the one courierd launches) runs it; a hook
/// may run twice when that instance dies after running it and before courierd hears that it has.
enum CompletionHook {
    /// How one download ended, for the hook's arguments and environment.
    struct Outcome {
        var file: String?
        var url: String
        var error: String?
        var httpStatus: Int?
    }

    /// The hooks started and not yet waited for.
    private static let running = LockedValue<[pid_t]>([])

    /// Starts `command` for `outcome`; a hook that cannot be started is said on standard error.
    static func run(_ command: String, for outcome: Outcome) {
        var environment = ProcessInfo.processInfo.environment
        environment["COURIER_RESULT"] = outcome.error == nil ? "saved" : "failed"
        environment["COURIER_FILE"] = outcome.file ?? ""
        environment["COURIER_URL"] = outcome.url
        environment["COURIER_ERROR"] = outcome.error
        environment["COURIER_HTTP_STATUS"] = outcome.httpStatus.map(String.init)
        let arguments = ["/bin/sh", "-c", command, "courier-hook", outcome.file ?? "", outcome.url]
        switch ProcessSpawner.spawn(arguments, environment: environment) {
        case .success(let pid):
            running.withLock { $0.append(pid) }
        case .failure(let error):
            FileHandle.standardError.write(Data("error: --on-complete: cannot start /bin/sh: \(error)\n".utf8))
        }
    }

    /// Waits for every hook started so far.
    static func waitForAll() {
        let pids = running.withLock { pids in
            defer { pids.removeAll() }
            return pids
        }
        for pid in pids {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    // MARK: Kept for background downloads

    private static var directory: URL {
        DaemonPaths.current.stateDirectory.appendingPathComponent("tool/hooks", isDirectory: true)
    }

    /// Keeps `command` for background task `task` of the tool's session, until ``take(for:)``.
    static func keep(_ command: String, for task: Int) throws {
        try FileManager.default.createDirectory(
            at: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        try Data(command.utf8).write(to: directory.appendingPathComponent("\(task)"), options: .atomic)
    }

    /// The command kept for `task`, if any; it is no longer kept.
    static func take(for task: Int) -> String? {
        let file = directory.appendingPathComponent("\(task)")
        guard let data = FileManager.default.contents(atPath: file.path) else {
            return nil
        }
        try? FileManager.default.removeItem(at: file)
        return String(decoding: data, as: UTF8.self)
    }
}
