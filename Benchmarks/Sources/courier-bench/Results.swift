import BenchmarkSupport
import Foundation

/// Every run's measurement, by workload and peer, and the medians the table reports.
struct Results: Codable {
    struct Key: Hashable, Codable {
        let workload: String
        let peer: Peer
    }

    private(set) var runs: [Key: [Measurement]] = [:]
    /// Each client's peak RSS for a single 1 KiB GET (median): what its libraries and runtime take before any
    /// transfer load.
    var startRSS: [Peer: Int] = [:]
    var queuedTaskBytes: Double?
    /// User-space instructions per 1 KiB GET with 100 in flight (``InstructionCount``), when measured.
    var instructionsPerRequest: [Peer: Double] = [:]

    mutating func record(_ measurement: Measurement, workload: Workload, peer: Peer) {
        runs[Key(workload: workload.name, peer: peer), default: []].append(measurement)
    }

    /// The median of each figure over the runs of `peer` on `workload`, nil if it has none.
    func median(_ workload: Workload, _ peer: Peer) -> Measurement? {
        guard let all = runs[Key(workload: workload.name, peer: peer)], !all.isEmpty else {
            return nil
        }
        let open = all.compactMap(\.open)
        return Measurement(
            wall: Self.median(all.map(\.wall)),
            cpu: Self.median(all.map(\.cpu)),
            peakRSS: Int(Self.median(all.map { Double($0.peakRSS) })),
            open: open.isEmpty
                ? nil
                : OpenTransfers(
                    seconds: Self.median(open.map(\.seconds)),
                    rss: Int(Self.median(open.map { Double($0.rss) })),
                    cpuPerSecond: Self.median(open.map(\.cpuPerSecond)),
                    descriptors: Int(Self.median(open.map { Double($0.descriptors) }))
                )
        )
    }

    /// Resident memory per open transfer above the client's start RSS (W7), bytes; nil when either is not measured.
    func rssPerOpenTransfer(_ workload: Workload, _ peer: Peer) -> Double? {
        guard let open = median(workload, peer)?.open, let start = startRSS[peer] else {
            return nil
        }
        return Double(open.rss - start) / Double(workload.concurrency)
    }

    func runCount(_ workload: Workload, _ peer: Peer) -> Int {
        runs[Key(workload: workload.name, peer: peer)]?.count ?? 0
    }

    /// The runs of a paced workload (W7) in which the client had every transfer open at once.
    func runsAllOpen(_ workload: Workload, _ peer: Peer) -> Int {
        runs[Key(workload: workload.name, peer: peer)]?.filter { $0.open != nil }.count ?? 0
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// A throughput target (issue 15): `subject`'s throughput at least `ratio` times `peer`'s on a workload.
struct Target {
    let workload: Workload
    let subject: Peer
    let peer: Peer
    let ratio: Double

    /// W1 and W2 through the swift-http-types API against the peers; the URLSession-shaped API within 10 % of the
    /// floor; the disk and upload workloads through the URLSession-shaped API.
    static let all: [Target] =
        [Workload.w1, .w2].flatMap { workload in
            [
                Target(workload: workload, subject: .courierHTTPTypes, peer: .ahc, ratio: 1.3),
                Target(workload: workload, subject: .courierHTTPTypes, peer: .curl, ratio: 1.2),
                Target(workload: workload, subject: .courierHTTPTypes, peer: .urlsession, ratio: 12),
                Target(workload: workload, subject: .courier, peer: .floor, ratio: 0.9),
            ]
        } + [
            Target(workload: .w1, subject: .courierHTTPTypes, peer: .c, ratio: 0.9),
            Target(workload: .w3, subject: .courier, peer: .curl, ratio: 1.3),
            Target(workload: .w4, subject: .courier, peer: .ahc, ratio: 1.1),
            Target(workload: .w5, subject: .courier, peer: .ahc, ratio: 1.1),
        ]

    /// Memory: a client's growth (peak RSS above its own start RSS) may exceed curl's growth by at most this much.
    static let growthAllowanceOverCurl = 10 << 20

    /// Ten thousand open at once (W7, issue 44), each of Courier's APIs against the C reference: memory per open
    /// transfer above the start and CPU per second while all are open at most 1.5× its, all open within 2× its time.
    static let open: [(subject: Peer, rss: Double, cpu: Double, seconds: Double)] = [
        (.courier, 1.5, 1.5, 2), (.courierHTTPTypes, 1.5, 1.5, 2),
    ]

    /// The least CPU per second `bench-launch --open` tells from none: one 10 ms tick in its 4 s window.
    static let openCPUResolution = 0.0025

    /// Instructions per request (callgrind, W1's shape): at most this many times the C reference's.
    static let instructions: [(subject: Peer, ratio: Double)] = [(.courierHTTPTypes, 2), (.courier, 2.5)]

    /// 100,000 queued tasks: at most this many bytes each.
    static let queuedTaskBytes = 1536.0

    /// A background session through courierd against Courier in-process (issue 39): throughput at least this fraction
    /// of it on large files (the cost of durability) and many small ones (the cost per task), and on the small ones at
    /// most this many times its CPU (the app's and courierd's together).
    static let background: [(workload: Workload, cpu: Bool, ratio: Double)] = [
        (.w4, false, 0.9), (.w6, false, 0.6), (.w6, true, 1.5),
    ]
}

/// The Markdown tables: medians per workload and peer, then the targets.
struct ResultTable {
    let results: Results
    let workloads: [Workload]
    let peers: [Peer]

    /// User-space instructions per request of each client measured, and its ratio to the C reference's.
    func renderInstructions() -> String {
        guard !results.instructionsPerRequest.isEmpty else {
            return ""
        }
        var lines = [
            "| Client | Instructions per request | ÷ C reference |",
            "|---|---:|---:|",
        ]
        let reference = results.instructionsPerRequest[.c]
        for peer in peers {
            guard let count = results.instructionsPerRequest[peer] else {
                continue
            }
            let ratio = reference.map { String(format: "%.2f×", count / $0) } ?? "–"
            lines.append("| \(peer.displayName) | " + String(format: "%.0f", count) + " | \(ratio) |")
        }
        return lines.joined(separator: "\n")
    }

    func render() -> String {
        var lines = [
            "| Workload | Client | Runs | Wall (s) | Throughput | CPU (s) | Peak RSS (MiB) | Above start (MiB) "
                + "| Courier's throughput ÷ this |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for workload in workloads {
            let courier = results.median(workload, .courier)
            for peer in peers {
                guard let measured = results.median(workload, peer) else {
                    continue
                }
                let ratio = courier.map { String(format: "%.2f×", measured.wall / $0.wall) } ?? "–"
                let aboveStart = results.startRSS[peer].map { mebibytes(measured.peakRSS - $0) } ?? "–"
                lines.append(
                    "| \(workload.name) | \(peer.displayName) | \(results.runCount(workload, peer)) | "
                        + String(format: "%.3f", measured.wall) + " | \(throughput(workload, measured)) | "
                        + String(format: "%.2f", measured.cpu) + " | "
                        + mebibytes(measured.peakRSS) + " | \(aboveStart) | \(ratio) |")
            }
        }
        lines += openTable()
        if !results.startRSS.isEmpty {
            let starts = peers.compactMap { peer in
                results.startRSS[peer].map { "\(peer.displayName) \(mebibytes($0)) MiB" }
            }
            lines.append("")
            lines.append(
                "Start RSS (one 1 KiB GET, the run's libraries and runtime): " + starts.joined(separator: ", "))
        }
        lines.append("")
        lines.append("| Target | Measured | Met |")
        lines.append("|---|---:|:---:|")
        for target in Target.all where workloads.contains(where: { $0.name == target.workload.name }) {
            guard let subject = results.median(target.workload, target.subject),
                let peer = results.median(target.workload, target.peer)
            else {
                continue
            }
            let ratio = peer.wall / subject.wall
            lines.append(
                "| \(target.workload.name): \(target.subject.displayName) ≥ \(format(target.ratio))× "
                    + "\(target.peer.displayName) | " + String(format: "%.2f×", ratio)
                    + " | \(ratio >= target.ratio ? "yes" : "**no**") |")
        }
        for target in Target.background where workloads.contains(where: { $0.name == target.workload.name }) {
            guard let courier = results.median(target.workload, .courier),
                let background = results.median(target.workload, .courierBackground)
            else {
                continue
            }
            let ratio = target.cpu ? background.cpu / courier.cpu : courier.wall / background.wall
            let met = target.cpu ? ratio <= target.ratio : ratio >= target.ratio
            lines.append(
                "| \(target.workload.name): \(Peer.courierBackground.displayName)"
                    + (target.cpu ? ", CPU (app and courierd) ≤ " : " ≥ ")
                    + "\(format(target.ratio))× Courier in-process | " + String(format: "%.2f×", ratio)
                    + " | \(met ? "yes" : "**no**") |")
        }
        lines += openTargets()
        lines += memoryTargets()
        if let reference = results.instructionsPerRequest[.c] {
            for target in Target.instructions {
                guard let subject = results.instructionsPerRequest[target.subject] else {
                    continue
                }
                let ratio = subject / reference
                lines.append(
                    "| Instructions per request: \(target.subject.displayName) ≤ \(format(target.ratio))× "
                        + "\(Peer.c.displayName) | " + String(format: "%.2f×", ratio)
                        + " | \(ratio <= target.ratio ? "yes" : "**no**") |")
            }
        }
        if let bytes = results.queuedTaskBytes {
            lines.append(
                "| 100,000 queued tasks: ≤ \(Int(Target.queuedTaskBytes)) bytes each | "
                    + String(format: "%.0f bytes each", bytes) + " | \(bytes <= Target.queuedTaskBytes ? "yes" : "**no**") |")
        }
        return lines.joined(separator: "\n")
    }

    /// What holding the transfers of each paced workload (W7) open cost each client: a table of its own.
    private func openTable() -> [String] {
        var lines: [String] = []
        for workload in workloads where workload.bytesPerSecond != nil {
            let measured = peers.compactMap { peer in results.median(workload, peer)?.open.map { (peer, $0) } }
            guard !measured.isEmpty else {
                continue
            }
            lines += [
                "",
                "\(workload.name), while all \(workload.concurrency) were open (medians of the runs that had all open at "
                    + "once):",
                "",
                "| Client | Runs all open | All open after (s) | RSS per open transfer above start (KiB) | "
                    + "CPU (s) per second | Descriptors |",
                "|---|---:|---:|---:|---:|---:|",
            ]
            for (peer, open) in measured {
                let allOpen = "\(results.runsAllOpen(workload, peer)) of \(results.runCount(workload, peer))"
                let perTransfer = results.rssPerOpenTransfer(workload, peer).map { String(format: "%.1f", $0 / 1024) }
                lines.append(
                    "| \(peer.displayName) | \(allOpen) | " + String(format: "%.2f", open.seconds)
                        + " | \(perTransfer ?? "–") | "
                        + String(format: "%.3f", open.cpuPerSecond) + " | \(open.descriptors) |")
            }
        }
        return lines
    }

    /// W7's targets against the C reference (``Target/open``).
    private func openTargets() -> [String] {
        var lines: [String] = []
        for workload in workloads where workload.bytesPerSecond != nil {
            guard let reference = results.median(workload, .c)?.open,
                let referenceRSS = results.rssPerOpenTransfer(workload, .c)
            else {
                continue
            }
            for target in Target.open {
                guard let open = results.median(workload, target.subject)?.open,
                    let rss = results.rssPerOpenTransfer(workload, target.subject)
                else {
                    continue
                }
                let name = "\(workload.name): \(target.subject.displayName)"
                // An idle C reference reads 0: its CPU counts as one tick (10 ms) in the 4 s window, the least seen.
                let referenceCPU = max(reference.cpuPerSecond, Target.openCPUResolution)
                let figures = [
                    ("RSS per open transfer", rss / referenceRSS, target.rss),
                    ("CPU per second while open", open.cpuPerSecond / referenceCPU, target.cpu),
                    ("time until all are open", open.seconds / reference.seconds, target.seconds),
                ]
                for (what, ratio, limit) in figures {
                    lines.append(
                        "| \(name), \(what) ≤ \(format(limit))× \(Peer.c.displayName) | "
                            + String(format: "%.2f×", ratio) + " | \(ratio <= limit ? "yes" : "**no**") |")
                }
            }
        }
        return lines
    }

    /// Growth (peak RSS above the client's own start RSS) against curl's growth + 10 MiB, for Courier's two APIs on
    /// every workload but W2, where curl runs 300 transfers at once and Courier 1,000: W2 is judged on W2-300.
    private func memoryTargets() -> [String] {
        var lines: [String] = []
        for workload in workloads where workload.name != Workload.w2.name {
            guard let curl = results.median(workload, .curl), let curlStart = results.startRSS[.curl] else {
                continue
            }
            let curlGrowth = curl.peakRSS - curlStart
            for subject in [Peer.courier, .courierHTTPTypes] {
                guard let measured = results.median(workload, subject), let start = results.startRSS[subject] else {
                    continue
                }
                let over = measured.peakRSS - start - curlGrowth
                lines.append(
                    "| \(workload.name): \(subject.displayName)'s growth ≤ curl's + 10 MiB | "
                        + String(format: "%+.1f MiB", Double(over) / 1_048_576) + " | "
                        + "\(over <= Target.growthAllowanceOverCurl ? "yes" : "**no**") |")
            }
        }
        return lines
    }

    private func throughput(_ workload: Workload, _ measured: Measurement) -> String {
        switch workload.kind {
        case .memory:
            String(format: "%.0f req/s", Double(workload.count) / measured.wall)
        case .disk, .upload:
            String(format: "%.1f MiB/s", Double(workload.totalBytes) / 1_048_576 / measured.wall)
        }
    }

    private func mebibytes(_ bytes: Int) -> String {
        String(format: "%.1f", Double(bytes) / 1_048_576)
    }

    private func format(_ ratio: Double) -> String {
        ratio == ratio.rounded() ? String(Int(ratio)) : String(ratio)
    }
}
