import CourierDaemon
import Foundation
import Logging
import Testing

/// The grace an app of the courierd before has to reconnect runs from when courierd accepts connections, not from its
/// start (restoring a large journal takes seconds): a relaunch asked for meanwhile waits for it.
@Suite("the relaunch grace")
struct RelaunchGraceTests {
    @Test("a wake made while the journal was restored waits the whole grace from the first accepted connection")
    func graceFromAccepting() async throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("relaunched-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: marker) }
        // Made long enough ago that its own grace has passed, as a courierd whose restore took that long.
        let launcher = AppLauncher(
            limiter: ResumeRateLimiter(initialDelay: 0),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
            now: Date().addingTimeInterval(-60)
        )
        launcher.wake(app: "App", session: "s", command: ["/bin/sh", "-c", "touch '\(marker.path)'"]) { true }
        launcher.accepting()
        try await Task.sleep(for: .seconds(AppLauncher.reconnectionGrace - 1))
        #expect(!FileManager.default.fileExists(atPath: marker.path), "launched within the grace")
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: marker.path), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(FileManager.default.fileExists(atPath: marker.path), "not launched after the grace")
    }
}
