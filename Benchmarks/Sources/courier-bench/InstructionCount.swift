import BenchmarkSupport
import Foundation

/// User-space instructions per request, counted by valgrind's callgrind: unlike wall or CPU time on this 2-core VM,
/// a count does not move with whatever else the machine runs. Each client runs a memory workload (W1's shape) twice
/// under callgrind, with `counts.small` and `counts.large` requests; the difference of the two totals divided by the
/// difference of the counts is the cost of one more request, with the process's start and exit taken out. Every
/// thread of the client is counted (callgrind runs them one at a time); nginx is not.
///
/// Two things valgrind 3.19 cannot do with Swift 6's executables: read their DWARF 5 (each Swift client runs from a
/// copy stripped of its debug information, `strip --strip-debug`, in the scratch folder; the toolchain's libraries
/// read fine), and run an async `main` (it faults in the `sigsuspend` where `dispatch_main` parks the main thread: the
/// clients' entry points are synchronous, `runBlocking`).
struct InstructionCount {
    let command: PeerCommand
    let scratch: URL
    let counts: (small: Int, large: Int)
    let deadline: Duration

    /// The instructions of one more request of `workload` with `peer`.
    func perRequest(_ peer: Peer, _ workload: Workload) throws -> Double {
        let small = try total(peer, workload.scaled(to: counts.small))
        let large = try total(peer, workload.scaled(to: counts.large))
        return Double(large - small) / Double(counts.large - counts.small)
    }

    /// Every instruction of one run of `workload` with `peer`.
    private func total(_ peer: Peer, _ workload: Workload) throws -> Int {
        var arguments = try command.arguments(for: peer, workload: workload)
        if peer != .curl, peer != .c {
            arguments[0] = try strippedCopy(of: arguments[0])
        }
        let output = scratch.appendingPathComponent("callgrind.out").path
        let stdout = scratch.appendingPathComponent("callgrind-stdout.txt").path
        let stderr = scratch.appendingPathComponent("callgrind-stderr.txt").path
        let valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=\(output)"]
        do {
            try ChildProcess(valgrind + arguments, stdout: stdout, stderr: stderr).wait(deadline: deadline)
        } catch {
            let said = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
            throw HarnessError("callgrind of \(peer.rawValue) failed (\(error)):\n\(said.suffix(2000))")
        }
        // `summary: N` (or `totals: N`): the instructions of the whole run, every thread's.
        let text = try String(contentsOfFile: output, encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
            if let count = line.split(separator: " ").last.flatMap({ Int($0) }) {
                return count
            }
        }
        throw HarnessError("callgrind of \(peer.rawValue) wrote no total to \(output)")
    }

    /// A copy of the executable at `path` without debug information, made once.
    private func strippedCopy(of path: String) throws -> String {
        let copy = scratch.appendingPathComponent(URL(fileURLWithPath: path).lastPathComponent + ".stripped").path
        if !FileManager.default.fileExists(atPath: copy) {
            let log = scratch.appendingPathComponent("strip.txt").path
            try ChildProcess(["strip", "--strip-debug", "-o", copy, path], stdout: log, stderr: log).wait()
        }
        return copy
    }
}
