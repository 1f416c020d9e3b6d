package import Foundation

/// A process's state as the kernel reports it (the field after the command name in `/proc/<pid>/stat`): `R`, `S`,
/// `T` (stopped), `Z` (dead, waiting to be reaped), …
package enum ProcessState {
    /// The state letter of `pid`; nil when it does not exist (or cannot be read).
    package static func of(_ pid: pid_t) -> Character? {
        fields(of: pid)?.first?.first
    }

    /// Whether `pid` is stopped (`T`, or `t` when traced).
    package static func isStopped(_ pid: pid_t) -> Bool {
        let state = of(pid)
        return state == "T" || state == "t"
    }

    /// When `pid` started, in clock ticks since boot (the 22nd field of `/proc/<pid>/stat`): with the pid, it names
    /// one process, whatever reuses the number later. Nil when it does not exist.
    package static func startTime(_ pid: pid_t) -> UInt64? {
        // After the command: state (field 3) … starttime (field 22).
        guard let fields = fields(of: pid), fields.count > 19 else {
            return nil
        }
        return UInt64(fields[19])
    }

    /// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces and parentheses): the state
    /// first. Nil when the process does not exist.
    private static func fields(of pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else {
            return nil
        }
        return stat[stat.index(after: close)...].split(separator: " ")
    }
}
