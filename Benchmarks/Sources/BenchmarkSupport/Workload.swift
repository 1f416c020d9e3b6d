import Foundation

/// One of the comparison's workloads (issue 4): what is transferred, how many times, and how many at once.
public struct Workload: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable {
        /// GETs whose bodies are kept in memory and dropped.
        case memory
        /// GETs whose bodies end up in files under the run's download folder.
        case disk
        /// PUTs of a body from memory (the fixture file, read once).
        case upload
    }

    /// Short name used on the command line and in the table: "W1" … "W7", "W2-300".
    public let name: String
    public let summary: String
    public let kind: Kind
    /// Transfers in one run.
    public let count: Int
    /// Transfers in flight at once.
    public let concurrency: Int
    /// The fixture each transfer reads (GET) or sends (PUT).
    public let fixture: Fixture
    /// How fast nginx sends each response (its `limit_rate`, under `/slow/`); nil: as fast as it can.
    public var bytesPerSecond: Int? = nil

    /// Bytes moved by one run.
    public var totalBytes: Int { count * fixture.size }

    /// The URL of transfer `index` under `baseURL` ("http://127.0.0.1:PORT").
    public func url(_ index: Int, baseURL: String) -> String {
        switch kind {
        case .memory, .disk:
            // One file on the server, a distinct query per transfer (nginx ignores it).
            "\(baseURL)\(fixturePath)?i=\(index)"
        case .upload:
            "\(baseURL)/upload/\(index).bin"
        }
    }

    /// The fixture's path on the server: under `/slow/` when its responses are paced (``bytesPerSecond``).
    public var fixturePath: String {
        (bytesPerSecond == nil ? "/" : "/slow/") + fixture.fileName
    }

    /// The paced location's rate (nginx has one `limit_rate` for it): W7's.
    public static let slowBytesPerSecond = 256

    /// The file transfer `index` is written to, for `.disk` workloads.
    public func outputName(_ index: Int) -> String {
        "\(index).bin"
    }

    public static let w1 = Workload(
        name: "W1", summary: "20,000 GETs of 1 KiB, 100 in flight", kind: .memory, count: 20_000, concurrency: 100,
        fixture: .small)
    public static let w2 = Workload(
        name: "W2", summary: "20,000 GETs of 1 KiB, 1,000 in flight", kind: .memory, count: 20_000,
        concurrency: 1_000, fixture: .small)
    /// W2 at curl's `--parallel-max` limit (300), so that memory is compared at the same number in flight.
    public static let w2AtCurlLimit = Workload(
        name: "W2-300", summary: "20,000 GETs of 1 KiB, 300 in flight", kind: .memory, count: 20_000,
        concurrency: 300, fixture: .small)
    public static let w3 = Workload(
        name: "W3", summary: "one 1 GiB download to disk", kind: .disk, count: 1, concurrency: 1, fixture: .huge)
    public static let w4 = Workload(
        name: "W4", summary: "200 downloads of 8 MiB to disk, 32 in flight", kind: .disk, count: 200,
        concurrency: 32, fixture: .medium)
    public static let w5 = Workload(
        name: "W5", summary: "500 uploads of 1 MiB, 32 in flight", kind: .upload, count: 500, concurrency: 32,
        fixture: .upload)

    /// Many small files: what a background session's per-task cost (journal, events, acknowledgements) comes to.
    public static let w6 = Workload(
        name: "W6", summary: "10,000 downloads of 1 KiB to disk, 32 in flight", kind: .disk, count: 10_000,
        concurrency: 32, fixture: .small)

    /// Ten thousand transfers open at once (issue 44): nginx sends each 8 KiB body at 256 bytes a second, so all stay
    /// open for about 16 s, and the harness reads what holding them costs the client (``bytesPerSecond``;
    /// `bench-launch --open`): how long until all are open, memory and descriptors per open transfer, CPU per
    /// second while they are.
    public static let w7 = Workload(
        name: "W7", summary: "10,000 GETs of 8 KiB open at once, each sent at 256 bytes/s", kind: .memory,
        count: 10_000, concurrency: 10_000, fixture: .slow, bytesPerSecond: slowBytesPerSecond)

    public static let all: [Workload] = [w1, w2, w2AtCurlLimit, w3, w4, w5, w6, w7]

    public static func named(_ name: String) -> Workload? {
        all.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The same workload with `count` transfers (its concurrency at most that).
    public func scaled(to count: Int) -> Workload {
        Workload(
            name: name, summary: summary, kind: kind, count: count, concurrency: min(concurrency, count),
            fixture: fixture, bytesPerSecond: bytesPerSecond)
    }

    /// The same workload with `count` scaled by `factor` (at least one transfer, at most `count`); for quick runs.
    public func scaled(by factor: Double) -> Workload {
        let scaled = max(1, min(count, Int((Double(count) * factor).rounded())))
        return Workload(
            name: name, summary: summary, kind: kind, count: scaled, concurrency: min(concurrency, scaled),
            fixture: fixture, bytesPerSecond: bytesPerSecond)
    }
}
