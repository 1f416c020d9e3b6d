import ArgumentParser
import BenchmarkSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The side-by-side comparison: starts nginx on loopback, runs every workload with Courier and the peers,
/// alternating their order run after run, checks what each run moved, and prints the medians as a table.
@main
struct CourierBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier-bench",
        abstract: "Compares Courier with URLSession, AsyncHTTPClient and curl --parallel against nginx on loopback."
    )

    @Option(help: "Runs of each workload per client; the table reports medians")
    var runs = 3

    @Option(
        help: "Runs of each download-to-disk workload (W3, W4) per client: their page-cache cost varies (README.md)")
    var diskRuns = 7

    @Option(help: "Workloads, comma-separated (W1,W2,W2-300,W3,W4,W5,W6,W7)")
    var workloads = "W1,W2,W2-300,W3,W4,W5,W6,W7"

    @Option(
        help: """
            Clients, comma-separated (courier,courier-ht,urlsession,ahc,curl,floor,c,courier-bg). courier-bg, a \
            background session through courierd, runs W4 and W6 only and needs courierd ($COURIERD, or beside the \
            clients)
            """)
    var peers = "courier,courier-ht,urlsession,ahc,curl,floor,c,courier-bg"

    @Option(help: "Seconds a client run may take; a client still running then is killed and the run fails (a hung client is never waited on)")
    var runDeadline: Int = 300

    @Option(help: "Multiplies every workload's transfer count (for a quick check: 0.05)")
    var scale = 1.0

    @Option(help: "Where fixtures, nginx and downloads live (the fixtures are kept for the next run)")
    var workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench").path

    @Option(help: "The folder holding bench-launch and the client executables (default: this one's)")
    var clients: String?

    @Option(help: "nginx worker_processes")
    var nginxWorkers = "auto"

    @Option(
        name: .customLong("protocol"),
        help: """
            What nginx speaks, comma-separated: http (plain HTTP/1.1), https (TLS, HTTP/1.1 only), h2 (TLS, HTTP/2 by \
            ALPN). Several run side by side, each run of a workload going through them in turn, with a table each. \
            Over TLS the clients trust nginx's certificate made for the run; URLSession and the floor do not run \
            (README.md)
            """)
    var serverProtocols = "http"

    @Flag(help: "Skip the 100,000 queued tasks measurement")
    var skipQueued = false

    @Flag(
        help: """
            Also count each client's user-space instructions per request with valgrind's callgrind (W1's shape: 1 KiB \
            GETs, 100 in flight), beside the wall-clock table
            """)
    var instructions = false

    @Option(help: "The two request counts whose difference --instructions divides by")
    var instructionCounts = "2000,6000"

    @Option(help: "Also write the table to this file")
    var markdown: String?

    @Option(help: "Also write every run's figures as JSON to this file")
    var json: String?

    func run() throws {
        let selectedWorkloads = try workloads.split(separator: ",").map { name in
            guard let workload = Workload.named(String(name)) else {
                throw ValidationError("unknown workload \(name)")
            }
            return workload.scaled(by: scale)
        }
        let wires = try serverProtocols.split(separator: ",").map { name in
            guard let wire = ServerProtocol(rawValue: String(name)) else {
                throw ValidationError("unknown protocol \(name) (http, https or h2)")
            }
            return wire
        }
        guard !wires.isEmpty else {
            throw ValidationError("--protocol needs at least one of http, https, h2")
        }
        let selectedPeers = try peers.split(separator: ",").map { name in
            guard let peer = Peer(rawValue: String(name)) else {
                throw ValidationError("unknown client \(name)")
            }
            return peer
        }
        for wire in wires {
            for peer in selectedPeers where !wire.supports(peer) {
                log("\(peer.rawValue) does not run over \(wire.rawValue): left out there")
            }
        }
        raiseDescriptorLimit()

        let root = URL(fileURLWithPath: workDirectory)
        let fixtures = root.appendingPathComponent("fixtures")
        let output = root.appendingPathComponent("downloads")
        let scratch = root.appendingPathComponent("scratch-\(getpid())")
        try FixtureFiles.prepare(selectedWorkloads.map(\.fixture), in: fixtures, log: log)
        for folder in [output, scratch] {
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(at: scratch) }

        let nginx = try Nginx(root: root, fixtures: fixtures, workers: nginxWorkers, protocols: wires)
        defer { nginx.stop() }
        log(
            "nginx on 127.0.0.1 (" + wires.map { "\($0.rawValue) :\(nginx.ports[$0] ?? 0)" }.joined(separator: ", ")
                + "), \(runs) runs per client (\(diskRuns) to disk), \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let executables = clients.map { URL(fileURLWithPath: $0) } ?? Self.executableFolder
        var commands: [ServerProtocol: PeerCommand] = [:]
        for wire in wires {
            commands[wire] = PeerCommand(
                executables: executables,
                baseURL: "\(wire.isTLS ? "https" : "http")://127.0.0.1:\(nginx.ports[wire] ?? 0)",
                serverProtocol: wire,
                certificate: wire.isTLS ? nginx.certificate : nil,
                fixtures: fixtures,
                output: output,
                scratch: scratch
            )
        }
        let command = commands[wires[0]]!

        var resultsByProtocol: [ServerProtocol: Results] = [:]
        for wire in wires {
            var results = Results()
            // Start RSS is one 1 KiB GET into memory: not for a background session, which has no data tasks.
            for peer in selectedPeers where peer.runs(.w1) && wire.supports(peer) {
                results.startRSS[peer] = try measureStartRSS(
                    peer, command: commands[wire]!, nginx: nginx, scratch: scratch)
            }
            resultsByProtocol[wire] = results
        }
        for workload in selectedWorkloads {
            for run in 0..<(workload.kind == .disk ? diskRuns : runs) {
                // W7 counts connections: over HTTP/2 its transfers share a few (Benchmarks/README.md).
                for wire in wires where workload.bytesPerSecond == nil || wire != .h2 {
                    let peers = selectedPeers.filter { $0.runs(workload) && wire.supports($0) }
                    guard !peers.isEmpty else {
                        continue
                    }
                    // Alternate: each run starts with the next client, so that no client always follows the same one.
                    let offset = run % peers.count
                    for peer in peers[offset...] + peers[..<offset] {
                        let measurement = try measure(
                            peer, workload, command: commands[wire]!, nginx: nginx, scratch: scratch)
                        resultsByProtocol[wire]!.record(measurement, workload: workload, peer: peer)
                        let open = workload.bytesPerSecond == nil ? nil : measurement.open.map { open in
                            String(
                                format: "; all open after %.2f s, then %.1f MiB RSS, %.3f s CPU a second, %d "
                                    + "descriptors", open.seconds, Double(open.rss) / 1_048_576, open.cpuPerSecond,
                                open.descriptors)
                        } ?? "; never all \(workload.concurrency) open at once (SYN retries: Benchmarks/README.md, W7)"
                        log(
                            "\(workload.name) \(wire.rawValue) \(peer.rawValue) run \(run + 1): "
                                + String(format: "%.3f s wall, %.2f s CPU, %.1f MiB peak RSS", measurement.wall,
                                    measurement.cpu, Double(measurement.peakRSS) / 1_048_576) + (open ?? ""))
                    }
                }
            }
        }
        // The queued tasks and the instruction counts: over the first protocol.
        if !skipQueued, selectedPeers.contains(.courier) {
            resultsByProtocol[wires[0]]!.queuedTaskBytes = try measureQueuedTasks(
                client: command.executable(for: .courier), scratch: scratch)
        }

        if instructions {
            let counts = instructionCounts.split(separator: ",").compactMap { Int($0) }
            guard counts.count == 2, counts[0] < counts[1] else {
                throw ValidationError("--instruction-counts takes two counts, the smaller first: 2000,6000")
            }
            try FixtureFiles.prepare([Workload.w1.fixture], in: fixtures, log: log)
            let counter = InstructionCount(
                command: command, scratch: scratch, counts: (counts[0], counts[1]), deadline: .seconds(runDeadline * 4))
            for peer in selectedPeers where peer.runs(.w1) && wires[0].supports(peer) {
                let perRequest = try counter.perRequest(peer, .w1)
                resultsByProtocol[wires[0]]!.instructionsPerRequest[peer] = perRequest
                log("instructions per request, \(peer.rawValue): " + String(format: "%.0f", perRequest))
            }
        }

        var table = ""
        for wire in wires {
            let rendered = ResultTable(
                results: resultsByProtocol[wire]!, workloads: selectedWorkloads,
                peers: selectedPeers.filter { wire.supports($0) })
            if wires.count > 1 {
                table += (table.isEmpty ? "" : "\n\n") + "Over \(wire.rawValue):\n\n"
            }
            table += rendered.render()
            let instructionTable = rendered.renderInstructions()
            if !instructionTable.isEmpty {
                table += "\n\nInstructions per request (callgrind; 1 KiB GETs, 100 in flight; "
                    + "(total at \(instructionCounts.split(separator: ",").last ?? "") − total at "
                    + "\(instructionCounts.split(separator: ",").first ?? "")) ÷ the difference):\n\n" + instructionTable
            }
        }
        print(table)
        if let markdown {
            try (table + "\n").write(toFile: markdown, atomically: true, encoding: .utf8)
        }
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let byName = Dictionary(uniqueKeysWithValues: resultsByProtocol.map { ($0.key.rawValue, $0.value) })
            let data = wires.count > 1 ? try encoder.encode(byName) : try encoder.encode(resultsByProtocol[wires[0]]!)
            try data.write(to: URL(fileURLWithPath: json))
        }
    }

    /// One run of one client: spawns it, reads its costs from `wait4`, checks what it moved, clears its files.
    private func measure(_ peer: Peer, _ workload: Workload, command: PeerCommand, nginx: Nginx, scratch: URL)
        throws -> Measurement
    {
        let arguments = try command.arguments(for: peer, workload: workload)
        if workload.kind != .memory {
            try FixtureFiles.warm(workload.fixture, in: command.fixtures)
        }
        let stdout = scratch.appendingPathComponent("stdout.txt").path
        let stderr = scratch.appendingPathComponent("stderr.txt").path
        let measurement: Measurement
        do {
            measurement = try Measurement.run(
                arguments, launcher: command.launcher, report: scratch.appendingPathComponent("costs.txt"),
                stdout: stdout, stderr: stderr, deadline: .seconds(runDeadline),
                open: workload.bytesPerSecond == nil ? nil : workload.concurrency)
        } catch {
            let said = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
            throw HarnessError("\(workload.name) with \(peer.rawValue) failed (\(error)):\n\(said.suffix(2000))")
        }
        try verify(workload, peer: peer, output: command.output, nginx: nginx, spent: scratch)
        if peer == .courierBackground, let said = try? String(contentsOfFile: stderr, encoding: .utf8) {
            // Where the run's time went: courierd's start, the resumes, the first file, the last, courierd's stop.
            log(said.split(separator: "\n").last.map(String.init) ?? "")
        }
        if workload.kind != .memory {
            // Write back what this run left dirty, so that the next run does not pay for it (not timed).
            sync()
        }
        return measurement
    }

    /// How many files a run may leave before they are kept until the harness ends instead of deleted after the run.
    /// On ext4 without a journal (this project's VM), each inode allocation steps over every inode of its group freed
    /// in the last 5–35 s (`find_inode_bit` → `recently_deleted`): deleting a W6 run's 10,000 files made the next
    /// run, whichever client it was, create each of its files 0.45–1 ms slower (measured: in-process W6 1.5 s first,
    /// 4–5.7 s right after another run). Kept until the end, they cost no run anything; a few large files free too few
    /// inodes to matter, and keeping them would fill the disk.
    static let filesKeptUntilTheEnd = 1_000

    /// Every download must be on disk with the fixture's length, every upload must have reached nginx. Then the
    /// downloads leave `output`: deleted, or, for a run of many files, moved into `spent` (deleted when the harness
    /// ends: ``filesKeptUntilTheEnd``).
    private func verify(_ workload: Workload, peer: Peer, output: URL, nginx: Nginx, spent: URL) throws {
        switch workload.kind {
        case .memory:
            return
        case .disk:
            var complete = 0
            for index in 0..<workload.count {
                let path = output.appendingPathComponent(workload.outputName(index)).path
                let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
                if size?.intValue == workload.fixture.size {
                    complete += 1
                }
            }
            if workload.count > Self.filesKeptUntilTheEnd {
                // Renamed whole: no inode is freed until the harness ends.
                let kept = spent.appendingPathComponent("spent-\(UUID().uuidString)")
                try FileManager.default.moveItem(at: output, to: kept)
                try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            } else {
                for name in try FileManager.default.contentsOfDirectory(atPath: output.path) {
                    try FileManager.default.removeItem(at: output.appendingPathComponent(name))
                }
            }
            guard complete == workload.count else {
                throw HarnessError("\(workload.name) with \(peer.rawValue): \(complete) of \(workload.count) files complete")
            }
        case .upload:
            let received = try nginx.takeUploads(size: workload.fixture.size)
            guard received == workload.count else {
                throw HarnessError("\(workload.name) with \(peer.rawValue): nginx has \(received) of \(workload.count) uploads")
            }
        }
    }

    /// The median peak RSS of three runs of a single 1 KiB GET with `peer`.
    private func measureStartRSS(_ peer: Peer, command: PeerCommand, nginx: Nginx, scratch: URL) throws -> Int {
        let single = Workload.w1.scaled(by: 0)
        let peaks = try (0..<3).map { _ in
            Double(try measure(peer, single, command: command, nginx: nginx, scratch: scratch).peakRSS)
        }
        let peak = Int(Results.median(peaks))
        log(String(format: "\(peer.rawValue) start RSS: %.1f MiB", Double(peak) / 1_048_576))
        return peak
    }

    private func measureQueuedTasks(client: String, scratch: URL) throws -> Double {
        let stdout = scratch.appendingPathComponent("queued.txt").path
        _ = try ChildProcess([client, "queued", "--count", "100000"], stdout: stdout,
            stderr: scratch.appendingPathComponent("queued-stderr.txt").path).wait(deadline: .seconds(runDeadline))
        let line = try String(contentsOfFile: stdout, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes = try ClientReport(line: line).bytesPerQueuedTask ?? .nan
        log(String(format: "100,000 queued tasks: %.0f bytes each", bytes))
        return bytes
    }

    /// The folder this executable lives in, where SwiftPM also puts the clients and bench-launch.
    private static var executableFolder: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// 1,000 connections in flight need more descriptors than the usual soft limit of 1,024, W7's 10,000 more than
    /// many hard limits' 4,096 (as a download manager does, the harness raises the soft limit to the hard one, at most
    /// 65,536); children inherit it.
    private func raiseDescriptorLimit() {
        var limit = rlimit()
        if getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = min(limit.rlim_max, 65_536)
            setrlimit(RLIMIT_NOFILE_VALUE, &limit)
        }
    }

    private func log(_ message: String) {
        FileHandle.standardError.write(Data("courier-bench: \(message)\n".utf8))
    }
}

#if canImport(Glibc)
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#endif
