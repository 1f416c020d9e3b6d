import Foundation

/// What one client run cost: its own wall time, CPU time and peak RSS, as `bench-launch` read them from `wait4`.
///
/// The harness does not read `wait4` itself: Linux carries a parent's peak RSS into the child's `ru_maxrss`
/// across `exec`, so every client spawned straight from this process (about 28 MiB) reported at least that.
/// `bench-launch` is a small C program (about 5 MiB resident): the clients it starts inherit its peak instead.
struct Measurement: Sendable, Codable {
    /// Seconds from spawn to exit.
    var wall: Double
    /// User plus system CPU seconds.
    var cpu: Double
    /// Peak resident set, bytes.
    var peakRSS: Int

    /// Runs `arguments` through `launcher` (bench-launch), which writes the run's costs to `report`; throws if the
    /// program did not exit with status 0, or was still running after `deadline` (it is killed then).
    static func run(
        _ arguments: [String],
        launcher: String,
        report: URL,
        stdout: String,
        stderr: String,
        deadline: Duration
    ) throws -> Measurement {
        try? FileManager.default.removeItem(at: report)
        try ChildProcess([launcher, report.path] + arguments, stdout: stdout, stderr: stderr).wait(deadline: deadline)
        let line = try String(contentsOf: report, encoding: .utf8)
        let fields = line.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
        guard fields.count == 5, let wall = Double(fields[0]), let user = Double(fields[1]),
            let system = Double(fields[2]), let peakKiB = Int(fields[3])
        else {
            throw HarnessError("bench-launch wrote an unreadable report: \(line)")
        }
        return Measurement(wall: wall, cpu: user + system, peakRSS: peakKiB * 1024)
    }
}
