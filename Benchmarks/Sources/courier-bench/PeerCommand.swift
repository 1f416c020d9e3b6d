import BenchmarkSupport
import Foundation

/// The command line that runs one workload with one peer: the peer's own executable (`bench-courier`,
/// `bench-courier-ht`, `bench-urlsession`, `bench-ahc`, `bench-floor`) for the Swift clients, the curl command line with `--parallel`
/// and a config file listing every transfer for curl.
struct PeerCommand {
    /// The folder holding `bench-launch` and the client executables.
    let executables: URL
    let baseURL: String
    let serverProtocol: ServerProtocol
    /// Over TLS: the certificate every client trusts.
    let certificate: URL?
    let fixtures: URL
    let output: URL
    let scratch: URL

    /// curl 7.88 takes at most 300 for `--parallel-max`.
    static let curlParallelLimit = 300

    func arguments(for peer: Peer, workload: Workload) throws -> [String] {
        switch peer {
        case .curl:
            let config = try curlConfig(for: workload)
            var arguments = [
                "curl", "--parallel", "--parallel-max", String(min(workload.concurrency, Self.curlParallelLimit)),
                "--silent", "--show-error", "--fail", "--config", config.path,
            ]
            if let certificate {
                arguments += ["--cacert", certificate.path, serverProtocol == .h2 ? "--http2" : "--http1.1"]
            }
            return arguments
        case .c:
            var arguments = [
                executable(for: peer), "--kind", workload.kind.rawValue, "--count", String(workload.count),
                "--parallel", String(workload.concurrency), "--size", String(workload.fixture.size),
            ]
            if let certificate {
                arguments += ["--cacert", certificate.path]
            }
            switch workload.kind {
            case .memory, .disk:
                arguments += ["--url", "\(baseURL)\(workload.fixturePath)?i=%d", "--output", output.path]
            case .upload:
                arguments += [
                    "--url", "\(baseURL)/upload/%d.bin",
                    "--upload-file", fixtures.appendingPathComponent(workload.fixture.fileName).path,
                ]
            }
            return arguments
        case .courier, .courierHTTPTypes, .courierBackground, .urlsession, .ahc, .floor:
            return [
                executable(for: peer), "run", workload.name, "--count", String(workload.count),
                "--base-url", baseURL, "--fixtures", fixtures.path, "--output", output.path,
            ] + (certificate.map { ["--ca-file", $0.path] } ?? [])
        }
    }

    /// The path of a Swift client's executable.
    func executable(for peer: Peer) -> String {
        executables.appendingPathComponent("bench-\(peer.rawValue)").path
    }

    /// The program every run goes through, which reports the run's own costs (``Measurement``).
    var launcher: String {
        executables.appendingPathComponent("bench-launch").path
    }

    /// One `url`/`output` (and `upload-file`) stanza per transfer, written once per workload.
    private func curlConfig(for workload: Workload) throws -> URL {
        let file = scratch.appendingPathComponent("curl-\(workload.name)-\(workload.count).cfg")
        if FileManager.default.fileExists(atPath: file.path) {
            return file
        }
        var lines: [String] = []
        lines.reserveCapacity(workload.count * 3)
        for index in 0..<workload.count {
            lines.append("url = \"\(workload.url(index, baseURL: baseURL))\"")
            switch workload.kind {
            case .memory:
                lines.append("output = \"/dev/null\"")
            case .disk:
                lines.append("output = \"\(output.appendingPathComponent(workload.outputName(index)).path)\"")
            case .upload:
                lines.append("upload-file = \"\(fixtures.appendingPathComponent(workload.fixture.fileName).path)\"")
                lines.append("output = \"/dev/null\"")
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        return file
    }
}
