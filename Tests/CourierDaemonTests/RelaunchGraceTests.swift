import CourierDaemon
import Foundation
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `AppLauncher` alone: the grace an app of the courierd before has to reconnect runs from when courierd accepts
/// connections, not from its start (restoring a large journal takes seconds), and a relaunch asked for meanwhile waits
/// for it; one launch at a time however many wakes come while it is made.
@Suite("the relaunch grace")
struct RelaunchGraceTests {
    @Test("a wake made while the journal was restored waits the whole grace from the first accepted connection")
    func graceFromAccepting() async throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("relaunched-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: marker) }
        let launcher = AppLauncher(
            limiter: ResumeRateLimiter(initialDelay: 0),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        )
        // The launched command writes when it ran (seconds since 1970): asserted not too early, whatever the load.
        let write = "date +%s.%N > '\(marker.path).tmp' && mv '\(marker.path).tmp' '\(marker.path)'"
        let command = ["/bin/sh", "-c", write]
        launcher.wake(app: "App", session: "s", command: command) { true }
        // As a courierd whose restore took longer than the grace: nothing is launched before it accepts connections.
        try await Task.sleep(for: .seconds(AppLauncher.reconnectionGrace + 0.5))
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        let accepted = Date()
        launcher.accepting(at: accepted)
        let deadline = ContinuousClock.now + .seconds(20)
        while !FileManager.default.fileExists(atPath: marker.path), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let written = try String(contentsOf: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let launchedAt = try #require(Double(written), "the launched command wrote \(written)")
        #expect(
            launchedAt >= accepted.timeIntervalSince1970 + AppLauncher.reconnectionGrace - 0.05,
            "launched \(launchedAt - accepted.timeIntervalSince1970) s after courierd began to accept"
        )
    }

    @Test("wakes made while a launch is being made start one process, not one each")
    func oneProcessForWakesDuringALaunch() async throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("launches-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: marker) }
        let launcher = AppLauncher(
            limiter: ResumeRateLimiter(initialDelay: 0),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        )
        launcher.accepting(at: Date().addingTimeInterval(-AppLauncher.reconnectionGrace))
        // Each process says it started, and runs long enough to be seen running by the wakes after it.
        let command = ["/bin/sh", "-c", "echo $$ >> '\(marker.path)'; sleep 3"]
        // The last look before a launch takes a while (courierd asks its sessions): wakes keep coming meanwhile.
        let wake = {
            launcher.wake(app: "App", session: "s", command: command) {
                usleep(300_000)
                return true
            }
        }
        wake()
        for _ in 0..<10 {
            try await Task.sleep(for: .milliseconds(100))
            wake()
        }
        try await Task.sleep(for: .seconds(1))
        let lines = (try? String(contentsOf: marker, encoding: .utf8))?.split(separator: "\n") ?? []
        #expect(lines.count == 1, "started \(lines.count) processes: \(lines)")
        // Nothing left running: each process ended and reaped (this process is its parent, as courierd is).
        for pid in lines.compactMap({ pid_t($0) }) {
            var status: Int32 = 0
            while waitpid(pid, &status, WNOHANG) == 0 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
