import CourierConcurrency
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The app instances connected in the background, one file each in the runtime directory (`instances/<pid>.<fd>`:
/// the process's start time and the app), so that the next courierd finds those an earlier one left stopped.
///
/// An instance suspends itself (SIGSTOP) between deliveries; when the courierd it was connected to dies or stops,
/// nothing continues it any more — its connection is gone, and a SIGCONT from another process would bring it to the
/// foreground. The next courierd reclaims each such instance (SIGCONT, SIGTERM, SIGKILL after a grace) as iOS
/// reclaims a suspended app: the app's sessions are held by nobody then, and courierd launches it afresh for their
/// events. Instances that are running reconnect by themselves and are left alone, and so are stopped foreground
/// ones (the user's Ctrl-Z: never recorded). The directory is in the runtime directory, gone with a reboot, when
/// every pid in it means nothing.
final class BackgroundInstanceRecords: Sendable {
    private let directory: URL
    private let logger: Logger

    init(runtimeDirectory: URL, logger: Logger) {
        directory = runtimeDirectory.appendingPathComponent("instances", isDirectory: true)
        self.logger = logger
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// `pid`'s connection `descriptor` says its app is in the background (recorded) or the foreground (forgotten).
    func note(pid: pid_t, descriptor: Int32, app: String, inBackground: Bool) {
        let file = self.file(pid: pid, descriptor: descriptor)
        guard inBackground, let started = ProcessState.startTime(pid) else {
            unlink(file.path)
            return
        }
        try? Data("\(started) \(app)\n".utf8).write(to: file, options: .atomic)
    }

    /// The connection closed while courierd goes on: nothing to find later.
    func forget(pid: pid_t, descriptor: Int32) {
        unlink(file(pid: pid, descriptor: descriptor).path)
    }

    /// At start: ends the stopped background instances an earlier courierd left (those that are still the process
    /// recorded, and stopped), in the background; forgets every record.
    func reclaimLeftovers(grace: TimeInterval) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var stopped: [pid_t: String] = [:]
        for name in names {
            let file = directory.appendingPathComponent(name)
            defer { unlink(file.path) }
            guard let pid = name.split(separator: ".").first.flatMap({ pid_t($0) }), pid > 0,
                let text = try? String(contentsOf: file, encoding: .utf8)
            else {
                continue
            }
            let fields = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 1)
            guard fields.count == 2, let started = UInt64(fields[0]), ProcessState.startTime(pid) == started,
                ProcessState.isStopped(pid)
            else {
                continue
            }
            stopped[pid] = String(fields[1])
        }
        guard !stopped.isEmpty else {
            return
        }
        for (pid, app) in stopped.sorted(by: { $0.key < $1.key }) {
            logger.info(
                "reclaiming an instance an earlier courierd left suspended",
                metadata: ["app": "\(app)", "pid": "\(pid)"]
            )
            kill(pid, SIGCONT)
            kill(pid, SIGTERM)
        }
        let pids = Array(stopped.keys)
        DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [logger] in
            for pid in pids where kill(pid, 0) == 0 && ProcessState.of(pid) != "Z" {
                logger.notice("a reclaimed instance did not end in time: killed", metadata: ["pid": "\(pid)"])
                kill(pid, SIGKILL)
            }
        }
    }

    private func file(pid: pid_t, descriptor: Int32) -> URL {
        directory.appendingPathComponent("\(pid).\(descriptor)")
    }
}
