import CourierLifecycle
import Foundation
import CourierTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The lifecycle of a real process: the LifecycleProbe executable, driven by real signals.
/// Short budgets and limits (probe arguments) keep each test to a second or two.
@Suite("Process lifecycle (real signals)", .blockingWaits, .serialized)
struct ProcessTests {
    private func isStopped(_ state: Character?) -> Bool { state == "T" }
    private func isRunning(_ state: Character?) -> Bool { state != nil && state != "T" && state != "t" }

    @Test("Ctrl-Z lets a running background task finish, then the process stops; SIGCONT resumes it")
    func terminalStopAndContinue() throws {
        let probe = try ProbeProcess(["--scenario", "finishing-task", "--task-ms", "400", "--budget", "5"])
        try probe.waitForLine("did-become-active state=active")

        probe.send(SIGTSTP)
        let resigned = try probe.waitForLine("will-resign-active")
        let entered = try probe.waitForLine("did-enter-background state=background", prefix: true, from: resigned)
        let begun = try probe.waitForLine("task-begin name=probe-work", prefix: true, from: entered)
        #expect(self.isRunning(probe.processState()))  // the task holds off suspension
        let ended = try probe.waitForLine("task-end name=probe-work", prefix: true, from: begun)
        let suspending = try probe.waitForLine("suspending", from: ended)
        #expect(suspending > ended)
        try probe.waitForProcessState("stopped", matching: self.isStopped)

        probe.send(SIGCONT)
        let resumed = try probe.waitForLine("resumed", from: suspending)
        let foreground = try probe.waitForLine("will-enter-foreground", from: resumed)
        try probe.waitForLine("did-become-active state=active", from: foreground)
        try probe.waitForProcessState("running", matching: self.isRunning)

        probe.send(SIGTERM)
        try probe.waitForLine("will-terminate", from: foreground)
        #expect(try probe.waitForExit() == 0)
    }

    @Test("SIGTERM enters the background and exits 0 after applicationWillTerminate, once the tasks end")
    func terminateCleanly() throws {
        let probe = try ProbeProcess(["--scenario", "finishing-task", "--task-ms", "300", "--budget", "5"])
        try probe.waitForLine("did-become-active state=active")

        probe.send(SIGTERM)
        let entered = try probe.waitForLine("did-enter-background state=background", prefix: true)
        let ended = try probe.waitForLine("task-end name=probe-work", prefix: true, from: entered)
        let terminating = try probe.waitForLine("will-terminate", from: ended)
        try probe.waitForLine("exiting status=0", from: terminating)
        #expect(try probe.waitForExit() == 0)
        #expect(!probe.stdout.all.contains("suspending"))
        #expect(probe.stderr.all.isEmpty)
    }

    @Test("a task never ended is terminated by the watchdog: report on stderr, exit status 96")
    func watchdogBudget() throws {
        let probe = try ProbeProcess(["--scenario", "never-ending-task", "--budget", "1"])
        try probe.waitForLine("did-become-active state=active")

        probe.send(SIGTSTP)
        let begun = try probe.waitForLine("task-begin name=probe-stuck id=1")
        try probe.waitForLine("expiration name=probe-stuck", from: begun)
        let status = try probe.waitForExit()
        #expect(status == Application.ExitStatus.backgroundTimeExpired.rawValue)
        #expect(status == 96)

        let report = probe.stderr.all
        let header = try #require(report.first)
        #expect(header.hasPrefix("courier-lifecycle watchdog: the background time budget of 1.000 s ran out"))
        #expect(header.hasSuffix("exit status 96"))
        let taskLine = try #require(report.first { $0.contains("\"probe-stuck\"") })
        // Begun right after entering the background: about the whole budget old.
        let prefix = "  - background task 1 \"probe-stuck\", open for "
        #expect(taskLine.hasPrefix(prefix + "0.9") || taskLine.hasPrefix(prefix + "1.0"))
        #expect(!probe.stdout.all.contains("suspending"))
    }

    @Test("a slow applicationDidEnterBackground is terminated: report on stderr, exit status 97")
    func watchdogSlowDelegate() throws {
        let probe = try ProbeProcess([
            "--scenario", "slow-enter-background", "--slow-ms", "10000", "--delegate-limit", "0.5",
        ])
        try probe.waitForLine("did-become-active state=active")

        probe.send(SIGTSTP)
        try probe.waitForLine("did-enter-background state=background", prefix: true)
        let status = try probe.waitForExit(timeout: .seconds(5))
        #expect(status == Application.ExitStatus.delegateTimeout.rawValue)
        #expect(status == 97)
        #expect(!probe.stdout.all.contains("did-enter-background-returned"))
        let report = probe.stderr.all.joined(separator: "\n")
        #expect(report.contains("watchdog: applicationDidEnterBackground(_:) did not return within 0.500 s"))
        #expect(report.contains("exit status 97"))
    }

    @Test("launched into the background by a launcher: no activation, stops when idle, SIGCONT brings it up")
    func launchedIntoBackground() throws {
        let probe = try ProbeProcess([], environment: ["COURIER_BACKGROUND_LAUNCH": "transfer"])
        let launched = try probe.waitForLine("did-finish-launching background=true reason=transfer")
        let entered = try probe.waitForLine("did-enter-background state=background", prefix: true, from: launched)
        try probe.waitForLine("suspending", from: entered)
        try probe.waitForProcessState("stopped", matching: self.isStopped)
        #expect(!probe.stdout.all.contains { $0.hasPrefix("did-become-active") })

        probe.send(SIGCONT)
        try probe.waitForLine("did-become-active state=active", from: entered)
        probe.send(SIGTERM)
        #expect(try probe.waitForExit() == 0)
    }

    @Test("a bad probe command line fails with usage status 64 (the probe's own check)")
    func probeUsage() throws {
        let probe = try ProbeProcess(["--scenario", "no-such-scenario"])
        #expect(try probe.waitForExit() == 64)
        #expect(probe.stderr.all.first?.contains("unknown scenario") == true)
    }
}
