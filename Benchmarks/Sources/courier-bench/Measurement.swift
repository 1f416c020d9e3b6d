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
    /// W7's figures while its transfers were all open (`bench-launch --open`); nil for the other workloads.
    var open: OpenTransfers? = nil

    /// Runs `arguments` through `launcher` (bench-launch), which writes the run's costs to `report`; throws if the
    /// program did not exit with status 0, or was still running after `deadline` (it is killed then). `open`: the
    /// transfers the run holds open at once, for ``open``'s figures.
    static func run(
        _ arguments: [String],
        launcher: String,
        report: URL,
        stdout: String,
        stderr: String,
        deadline: Duration,
        open: Int? = nil
    ) throws -> Measurement {
        try? FileManager.default.removeItem(at: report)
        let watch = open.map { ["--open", String($0)] } ?? []
        try ChildProcess([launcher] + watch + [report.path] + arguments, stdout: stdout, stderr: stderr)
            .wait(deadline: deadline)
        let line = try String(contentsOf: report, encoding: .utf8)
        let fields = line.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
        guard fields.count == (open == nil ? 5 : 9), let wall = Double(fields[0]), let user = Double(fields[1]),
            let system = Double(fields[2]), let peakKiB = Int(fields[3])
        else {
            throw HarnessError("bench-launch wrote an unreadable report: \(line)")
        }
        var measurement = Measurement(wall: wall, cpu: user + system, peakRSS: peakKiB * 1024)
        if open != nil {
            guard let seconds = Double(fields[5]), let rssKiB = Int(fields[6]), let cpu = Double(fields[7]),
                let descriptors = Int(fields[8])
            else {
                throw HarnessError("bench-launch wrote an unreadable report: \(line)")
            }
            // All open, or the run's other figures only: with 10,000 connections at once, the server's accept queue
            // (4,096, the kernel's somaxconn) may overflow while the client keeps both cores busy, and a connection
            // whose SYN is dropped waits 1, 2, 4 s… for its retry, sometimes until the first transfers have ended.
            if seconds >= 0, rssKiB >= 0, cpu >= 0, descriptors >= 0 {
                measurement.open = OpenTransfers(
                    seconds: seconds, rss: rssKiB * 1024, cpuPerSecond: cpu, descriptors: descriptors)
            }
        }
        return measurement
    }
}

/// What holding many transfers open cost a client (W7), as `bench-launch --open` watched it: from its start until
/// every connection was established, then over the 4 s that start 2 s later.
struct OpenTransfers: Sendable, Codable {
    /// Seconds from the client's start until all its connections were established.
    var seconds: Double
    /// The most resident memory seen while all were open, bytes.
    var rss: Int
    /// CPU seconds per second while all were open.
    var cpuPerSecond: Double
    /// File descriptors the client held then.
    var descriptors: Int
}
