import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The issue's end-to-end proof with real processes: an app (Tests/Fixtures/BackgroundProbe) starts 20 background
/// downloads and uploads and is SIGKILLed; courierd finishes them and relaunches the app, which hears every event
/// once, in order, and finds every file intact.
@Suite("courierd relaunches a killed app", .blockingWaits, .serialized)
struct RelaunchTests {
    /// The probe's log, one object a line.
    static func entries(_ path: String) -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: path) else {
            return []
        }
        return data.split(separator: 0x0A).compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any]
        }
    }

    static func wait(for event: String, in log: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if entries(log).contains(where: { $0["event"] as? String == event }) {
                return true
            }
            usleep(50_000)
        }
        return false
    }

    @Test("an app launched into the background creates a discretionary task; courierd says why it waits")
    func taskCreatedInBackgroundWaits() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(environment: ["COURIER_POWER": "battery"])
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        let arguments = [
            "--runtime", daemon.runtime.path, "--state", daemon.state.path, "--log", log,
            "--download", server.url("/bytes/1000").absoluteString,
        ]
        var environment = daemon.clientEnvironment
        environment["COURIER_BACKGROUND_LAUNCH"] = "fetch"
        let app = try ChildProcess(
            try siblingExecutable("BackgroundProbe"),
            arguments: arguments,
            environment: environment,
            standardError: .inherit
        )
        defer {
            app.send(SIGKILL)
            _ = app.wait(timeout: .seconds(10))
        }
        #expect(Self.wait(for: "journaled", in: log, timeout: 30))
        var client = try Client.looking(at: daemon.socket)
        let snapshots = try client.tasks(of: "com.example.probe.background") { $0.first?.waitingReason != nil }
        #expect(snapshots.count == 1)
        #expect(snapshots.first?.task?.createdInBackground == true)
        #expect(
            snapshots.first?.waitingReason
                == "waiting for external power (discretionary: created while the app was in the background)"
        )
        client.close()
        try await server.shutdown()
    }

    @Test("launched for its session's events with none left to deliver, the app still hears urlSessionDidFinishEvents")
    func relaunchWithNothingLeft() async throws {
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        let app = try Self.probe(on: daemon, log: log, launchedFor: "urlsession:com.example.probe.background")
        defer {
            app.send(SIGKILL)
            _ = app.wait(timeout: .seconds(10))
        }
        // Without it the app's background task would stay open until the watchdog ended the process.
        #expect(Self.wait(for: "exit", in: log, timeout: 20), "\(Self.entries(log))")
        // "tasks" is logged on the callback queue once the session is made, the delegate's calls come on its own
        // queue: the two orders are both right, and "exit" can be in the log before "tasks" is. (Handing back the
        // completion suspends the application on the callback queue, behind the relaunch call that logs "tasks".)
        #expect(Self.wait(for: "tasks", in: log, timeout: 20), "\(Self.entries(log))")
        let events = Self.entries(log).compactMap { $0["event"] as? String }
        #expect(events.filter { $0 != "tasks" } == ["relaunched", "didFinishEvents", "exit"], "\(events)")
        #expect(events.contains("tasks"), "\(events)")
    }

    @Test("the user starts the app while a relaunched instance is suspended holding the session: it gets the session")
    func suspendedInstanceIsReclaimed() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        let relaunched = try await Self.suspendedInstance(on: daemon, log: log)
        defer {
            relaunched.send(SIGKILL)
            _ = relaunched.wait(timeout: .seconds(10))
        }

        let user = try Self.probe(
            on: daemon,
            log: log,
            launchedFor: nil,
            ["--download", server.url("/bytes/2000?seed=3").absoluteString, "--stay"]
        )
        defer {
            user.send(SIGKILL)
            _ = user.wait(timeout: .seconds(10))
        }
        #expect(user.wait(timeout: .seconds(30)) == .exited(0))
        let completions = Self.entries(log).filter {
            $0["event"] as? String == "completed" && $0["pid"] as? Int == Int(user.pid)
        }
        #expect(completions.count == 1)
        #expect(completions.first?["error"] == nil, "\(completions)")
        #expect(completions.first?["status"] as? Int == 200)
        // The suspended instance was continued and terminated as iOS reclaims a suspended app.
        #expect(relaunched.wait(timeout: .seconds(10)) == .exited(0))
        #expect(
            Self.entries(log).contains {
                $0["event"] as? String == "terminated" && $0["pid"] as? Int == Int(relaunched.pid)
            }
        )
        try await server.shutdown()
    }

    @Test("a suspended app is continued for its session's events, hears them, and suspends itself again")
    func suspendedAppWokenForEvents() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        // 300,000 bytes, 16 KiB every 200 ms: about 4 s, long after the app has suspended itself.
        let url = server.url("/bytes/300000?seed=7&trickle=16384&interval=200")
        let app = try Self.probe(on: daemon, log: log, launchedFor: "fetch", ["--download", url.absoluteString])
        defer {
            app.send(SIGKILL)
            _ = app.wait(timeout: .seconds(10))
        }
        #expect(Self.wait(for: "journaled", in: log, timeout: 30))
        // In the background with no background task left, the application suspends itself while courierd downloads.
        #expect(
            await FetchAndPushTests.waitStopped(app.pid, timeout: 10),
            "the app did not suspend itself"
        )
        #expect(!Self.entries(log).contains { $0["event"] as? String == "completed" }, "the download ended too soon")
        // The download ends: courierd writes the events, then continues the app, which hears them ...
        #expect(Self.wait(for: "completed", in: log, timeout: 30), "\(Self.entries(log))")
        let entries = Self.entries(log)
        let completed = entries.first { $0["event"] as? String == "completed" }
        #expect(completed?["error"] == nil && completed?["status"] as? Int == 200, "\(entries)")
        let copy = try #require(entries.first { $0["event"] as? String == "finished" }?["copy"] as? String)
        #expect(FileManager.default.contents(atPath: copy) == TestServer.bytes(count: 300_000, seed: 7))
        // ... and, its delegate calls done, suspends itself again.
        #expect(
            await FetchAndPushTests.waitStopped(app.pid, timeout: 10),
            "the app was not suspended again after its events"
        )
        try await server.shutdown()
    }

    @Test("a suspended instance is left alone while its session has work, and reclaimed once it has stayed idle")
    func idleSuspendedInstanceIsReclaimed() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--reclaim-idle-after", "1"])
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        // About 4 s of download: the app is suspended, with work, for longer than the idle delay.
        let url = server.url("/bytes/300000?seed=8&trickle=16384&interval=200")
        let app = try Self.probe(on: daemon, log: log, launchedFor: "fetch", ["--download", url.absoluteString])
        defer {
            app.send(SIGKILL)
            _ = app.wait(timeout: .seconds(10))
        }
        #expect(Self.wait(for: "journaled", in: log, timeout: 30))
        #expect(await FetchAndPushTests.waitStopped(app.pid, timeout: 10), "the app did not suspend itself")
        // Suspended with a task running: not reclaimed; it hears the end of its download.
        #expect(Self.wait(for: "completed", in: log, timeout: 30), "\(Self.entries(log))")
        #expect(!Self.entries(log).contains { $0["event"] as? String == "terminated" }, "reclaimed while it had work")
        // Suspended again with nothing left: ended as iOS reclaims a suspended app (SIGTERM: it terminates).
        #expect(app.wait(timeout: .seconds(20)) == .exited(0))
        #expect(Self.entries(log).contains { $0["event"] as? String == "terminated" }, "\(Self.entries(log))")
        try await server.shutdown()
    }

    @Test("courierd is SIGKILLed while an instance is suspended: the next courierd reclaims it instead of leaving it stopped")
    func suspendedInstanceOutlivesCourierd() async throws {
        let daemon = Daemon()
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        let relaunched = try await Self.suspendedInstance(on: daemon, log: log)
        defer {
            relaunched.send(SIGKILL)
            _ = relaunched.wait(timeout: .seconds(10))
        }
        daemon.kill()
        // Nothing continues it now; the next courierd finds it recorded, stopped, and ends it.
        #expect(ProcessState.isStopped(relaunched.pid))
        try daemon.start()
        #expect(relaunched.wait(timeout: .seconds(20)) == .exited(0))
        #expect(
            Self.entries(log).contains {
                $0["event"] as? String == "terminated" && $0["pid"] as? Int == Int(relaunched.pid)
            }
        )
    }

    /// A BackgroundProbe relaunched for its session's events with `--linger`, once it has heard them and suspended
    /// itself, still holding the session (the caller ends it).
    static func suspendedInstance(on daemon: Daemon, log: String) async throws -> ChildProcess {
        let relaunched = try probe(
            on: daemon,
            log: log,
            launchedFor: "urlsession:com.example.probe.background",
            ["--linger"]
        )
        #expect(wait(for: "idle", in: log, timeout: 20), "\(entries(log))")
        #expect(
            await FetchAndPushTests.waitStopped(relaunched.pid, timeout: 10),
            "the relaunched instance did not suspend itself"
        )
        return relaunched
    }

    /// The BackgroundProbe on `daemon`'s directories, logging to `log`, launched into the background for `reason`
    /// (`COURIER_BACKGROUND_LAUNCH`) or by hand (nil); its standard error is the test's.
    static func probe(
        on daemon: Daemon,
        log: String,
        launchedFor reason: String?,
        _ arguments: [String] = []
    ) throws -> ChildProcess {
        var environment = daemon.clientEnvironment
        environment["COURIER_BACKGROUND_LAUNCH"] = reason
        return try ChildProcess(
            try siblingExecutable("BackgroundProbe"),
            arguments: ["--runtime", daemon.runtime.path, "--state", daemon.state.path, "--log", log] + arguments,
            environment: environment,
            standardError: .inherit
        )
    }

    @Test("a finished download whose file is gone before the relaunched app takes it fails as fileDoesNotExist")
    func finishedFileGoneBeforeDelivery() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        // 32 KiB every 40 ms: the download outlives the app.
        let url = server.url("/bytes/600000?seed=8&trickle=32768&interval=40").absoluteString
        let app = try Self.probe(on: daemon, log: log, launchedFor: nil, ["--download", url])
        #expect(Self.wait(for: "journaled", in: log, timeout: 30))
        app.send(SIGKILL)
        _ = app.wait(timeout: .seconds(10))
        // A new courierd relaunches no app for 3 s (AppLauncher.reconnectionGrace): time to take its finished file
        // away, as a cleaner of the state directory would, before the app hears of it.
        daemon.killServing()
        try daemon.start()
        let downloads = daemon.state.appendingPathComponent("downloads")
        let deadline = Date().addingTimeInterval(3)
        var finished: [String] = []
        while finished.isEmpty, Date() < deadline {
            usleep(10_000)
            finished = (try? FileManager.default.contentsOfDirectory(atPath: downloads.path)) ?? []
        }
        #expect(!finished.isEmpty, "courierd did not finish the download within its 3 s of grace")
        for name in finished {
            try FileManager.default.removeItem(at: downloads.appendingPathComponent(name))
        }
        #expect(Self.wait(for: "exit", in: log, timeout: 60), "\(Self.entries(log))")
        let entries = Self.entries(log)
        let completed = entries.filter { $0["event"] as? String == "completed" }
        #expect(completed.count == 1)
        let error = completed.first?["error"] as? String ?? ""
        #expect(error.contains("CourierError.fileDoesNotExist") && error.contains("is gone"), "\(error)")
        #expect(entries.filter { $0["event"] as? String == "finished" }.isEmpty, "\(entries)")
        try await server.shutdown()
    }

    @Test("20 downloads and uploads outlive a SIGKILLed app; the relaunched app hears each event once, files intact")
    func killedAppIsRelaunched() async throws {
        let server = try await TestServer.start()
        let daemon = Daemon(arguments: ["--relaunch-delay", "0", "--retry-delay", "0.2"])
        defer { daemon.cleanup() }
        try daemon.start()
        let log = daemon.root.appendingPathComponent("probe.log").path
        var arguments = ["--runtime", daemon.runtime.path, "--state", daemon.state.path, "--log", log]
        var expected: [Int: Data] = [:]
        var uploads: [Int: Data] = [:]
        for index in 1...14 {
            let count = 100_000 + index * 150_000
            // 32 KiB every 40 ms: each download lasts more than a second, so the app is killed in the middle.
            arguments += ["--download", server.url("/bytes/\(count)?seed=\(index)&trickle=32768&interval=40").absoluteString]
            expected[index] = TestServer.bytes(count: count, seed: index)
        }
        for index in 15...20 {
            let body = TestServer.bytes(count: 50_000 * index, seed: 100 + index)
            let file = daemon.root.appendingPathComponent("upload-\(index).bin")
            try body.write(to: file)
            arguments += ["--upload", "\(server.url("/upload?delay=4000").absoluteString)=\(file.path)"]
            uploads[index] = body
        }
        let app = try ChildProcess(try siblingExecutable("BackgroundProbe"), arguments: arguments, environment: daemon.clientEnvironment, standardError: .inherit)
        #expect(Self.wait(for: "journaled", in: log, timeout: 30))
        app.send(SIGKILL)
        _ = app.wait(timeout: .seconds(10))

        let exited = Self.wait(for: "exit", in: log, timeout: 90)
        let entries = Self.entries(log)
        #expect(exited, "the relaunched app did not finish; its log: \(entries)")
        let relaunched = Set(entries.filter { $0["event"] as? String == "relaunched" }.compactMap { $0["pid"] as? Int })
        // Once: wakes that come while the relaunch is being made do not start a second process (RelaunchGraceTests).
        #expect(relaunched.count == 1, "relaunched as \(relaunched); the log: \(entries)")
        // The relaunched app got standard input, output and error from courierd, and nothing else: none of courierd's
        // connections to the test server (14 downloads were running), its socket or its journal.
        for entry in entries where entry["event"] as? String == "relaunched" {
            #expect(entry["inherited"] as? [String] == [], "inherited from courierd: \(entry["inherited"] ?? "")")
        }
        #expect(!relaunched.contains(Int(app.pid)))
        var completions: [Int: Int] = [:]
        for entry in entries where entry["event"] as? String == "completed" {
            let task = try #require(entry["task"] as? Int)
            completions[task, default: 0] += 1
            #expect(entry["error"] == nil, "task \(task): \(entry["error"] ?? "")")
            #expect(entry["status"] as? Int == 200)
        }
        #expect(completions.keys.sorted() == Array(1...20))
        #expect(completions.values.allSatisfy { $0 == 1 }, "\(completions)")
        for (task, data) in expected {
            let finished = entries.filter { $0["event"] as? String == "finished" && $0["task"] as? Int == task }
            #expect(finished.count == 1, "task \(task)")
            let copy = try #require(finished.first?["copy"] as? String)
            #expect(FileManager.default.contents(atPath: copy) == data, "task \(task)")
            // didFinishDownloadingTo came before didCompleteWithError.
            let order = entries.compactMap { entry -> String? in
                guard entry["task"] as? Int == task else { return nil }
                return entry["event"] as? String
            }
            #expect(order.suffix(2) == ["finished", "completed"])
        }
        for (task, body) in uploads {
            let answers = entries.filter { $0["event"] as? String == "data" && $0["task"] as? Int == task }
            #expect(answers.count == 1, "task \(task)")
            let json = (answers.first?["body"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]
            #expect(json?["sha256"] as? String == TestServer.sha256Hex(body), "task \(task)")
        }
        #expect(entries.filter { $0["event"] as? String == "didFinishEvents" }.count >= 1)
        // What the relaunched app printed is in its log, after the line that says why it was launched, and
        // `courier logs` shows it.
        let appLog = daemon.paths.appLog(of: "BackgroundProbe")
        let logged = String(decoding: FileManager.default.contents(atPath: appLog.path) ?? Data(), as: UTF8.self)
        #expect(logged.contains("courierd launched") && logged.contains("for urlsession:com.example.probe.background"))
        let shown = try ChildProcess.run(
            try siblingExecutable("courier"),
            arguments: ["logs", "BackgroundProbe", "--lines", "1000"],
            environment: daemon.clientEnvironment,
            timeout: .seconds(30)
        )
        #expect(shown.termination == .exited(0))
        #expect(String(decoding: shown.standardOutput, as: UTF8.self) == logged)
        #expect(daemon.stop() == .exited(0))
        try await server.shutdown()
    }
}
