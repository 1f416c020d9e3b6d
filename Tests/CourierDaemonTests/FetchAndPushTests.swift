import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Background fetch and remote notifications end to end, with real processes: courierd, the PushProbe app
/// (Tests/Fixtures/PushProbe), the `courier` tool and the HTTP push endpoint.
@Suite("courierd wakes apps for fetches and pushes", .blockingWaits, .serialized)
struct FetchAndPushTests {
    /// courierd on XDG directories, an app started by hand in the foreground, and its log.
    final class Scene {
        let daemon: Daemon
        let log: String
        let server: TestServer
        var app: ChildProcess?

        init(daemonArguments: [String] = ["--relaunch-delay", "0"], environment: [String: String] = [:]) async throws {
            server = try await TestServer.start()
            daemon = Daemon(arguments: daemonArguments, environment: environment)
            try daemon.start()
            log = daemon.root.appendingPathComponent("probe.log").path
        }

        func probeArguments(_ extra: [String] = []) -> [String] {
            ["--log", log, "--server", server.url("/").absoluteString.trimmingCharacters(in: ["/"])] + extra
        }

        /// Starts the app in the foreground and returns its device token, once it has registered.
        func startApp(_ extra: [String] = []) async throws -> String {
            app = try ChildProcess(
                try siblingExecutable("PushProbe"),
                arguments: probeArguments(extra),
                environment: daemon.clientEnvironment,
                standardError: .inherit
            )
            return try #require(await waitFor("token")?["token"] as? String)
        }

        /// The first log entry of `event` after `skipping` earlier ones, waiting up to `timeout`.
        func waitFor(_ event: String, skipping: Int = 0, timeout: TimeInterval = 30) async -> [String: Any]? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let matching = entries(event)
                if matching.count > skipping {
                    return matching[skipping]
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return nil
        }

        func entries(_ event: String) -> [[String: Any]] {
            RelaunchTests.entries(log).filter { $0["event"] as? String == event }
        }

        /// Runs `courier ARGUMENTS` against this daemon.
        func courier(_ arguments: [String]) throws -> ChildProcess.Completed {
            try ChildProcess.run(
                try siblingExecutable("courier"),
                arguments: arguments,
                environment: daemon.clientEnvironment,
                timeout: .seconds(30)
            )
        }

        /// `courier apps --json`, decoded.
        func apps() throws -> [IPCMessage.AppSummary] {
            try JSONDecoder().decode([IPCMessage.AppSummary].self, from: try courier(["apps", "--json"]).standardOutput)
        }

        func finish() async throws {
            app?.send(SIGKILL)
            _ = app?.wait(timeout: .seconds(10))
            daemon.cleanup()
            try await server.shutdown()
        }
    }

    /// Whether `pid` is stopped (suspended by its lifecycle), waiting up to `timeout` for it to be `stopped`.
    static func waitStopped(_ pid: pid_t, _ stopped: Bool = true, timeout: TimeInterval = 15) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (ProcessState.of(pid) == "T") == stopped {
                return true
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("the seed's scenario: a push launches a killed app, it starts a background download, courierd relaunches it for the events")
    func pushLaunchesKilledApp() async throws {
        let scene = try await Scene()
        do {
            let token = try await scene.startApp()
            #expect(token.count == 64)
            scene.app?.send(SIGKILL)
            _ = scene.app?.wait(timeout: .seconds(10))

            let push = try scene.courier(["push", token, "-n", "-d", "content-id=42"])
            let said = String(decoding: push.standardOutput, as: UTF8.self)
            #expect(push.termination == .exited(0), "\(String(decoding: push.standardError, as: UTF8.self))")
            #expect(said.contains("delivered"))

            // Launched in the background for the push, with its payload.
            let launched = try #require(await scene.waitFor("launched", skipping: 1))
            #expect(launched["reason"] as? String == "remote-notification")
            #expect((launched["payload"] as? String)?.contains("\"content-id\":\"42\"") == true)
            let handled = try #require(await scene.waitFor("push"))
            #expect(handled["content-id"] as? String == "42")
            #expect(handled["state"] as? String == "background")
            #expect(await scene.waitFor("enqueued") != nil)
            #expect(await scene.waitFor("exit") != nil)
            // The download ends while the app is gone: courierd relaunches it for the session's events.
            let relaunched = try #require(await scene.waitFor("relaunched"))
            #expect(relaunched["session"] as? String == "com.example.probe.push")
            #expect(relaunched["pid"] as? Int != handled["pid"] as? Int)
            let downloaded = try #require(await scene.waitFor("downloaded"))
            #expect(downloaded["bytes"] as? Int == 4096 + 42)
            #expect(downloaded["description"] as? String == "content 42")
            #expect(await scene.waitFor("didFinishEvents") != nil)
            #expect(scene.entries("downloaded").count == 1)
            // Each launch registered again, with the same token.
            #expect(Set(scene.entries("token").compactMap { $0["token"] as? String }) == [token])
        } catch {
            Issue.record(error)
        }
        try await scene.finish()
    }

    @Test("a running app gets a push at once; a suspended one is resumed in the background for a push and a fetch, then suspended again")
    func runningAndSuspendedApps() async throws {
        let scene = try await Scene()
        do {
            let token = try await scene.startApp()
            let app = try #require(scene.app)
            _ = try scene.courier(["push", token, "-n", "-d", "content-id=1"])
            #expect(await scene.waitFor("push")?["state"] as? String == "active")

            app.send(SIGTSTP)
            #expect(await Self.waitStopped(app.pid), "the app did not suspend itself")
            let push = try scene.courier(["push", token, "-n"])
            #expect(String(decoding: push.standardOutput, as: UTF8.self).contains("delivered"))
            let woken = try #require(await scene.waitFor("push", skipping: 1))
            #expect(woken["state"] as? String == "background")
            #expect(await Self.waitStopped(app.pid), "the app was not suspended again after its handler")

            let fetch = try scene.courier(["fetch", "simulate", "PushProbe"])
            #expect(fetch.termination == .exited(0))
            #expect(await scene.waitFor("fetch")?["state"] as? String == "background")
            #expect(await Self.waitStopped(app.pid))

            // The user's SIGCONT brings it to the foreground, as before.
            app.send(SIGCONT)
            #expect(await scene.waitFor("active", skipping: 1) != nil)
            _ = try scene.courier(["push", token, "-n", "-d", "content-id=3"])
            #expect(await scene.waitFor("push", skipping: 2)?["state"] as? String == "active")

            let launch = try scene.courier(["fetch", "launch", "PushProbe"])
            #expect(launch.termination != .exited(0), "fetch launch must be refused while the app runs")
        } catch {
            Issue.record(error)
        }
        try await scene.finish()
    }

    @Test("a handler that does not finish in time is an overrun: the app is suspended again, courierd records it")
    func overrun() async throws {
        let scene = try await Scene()
        do {
            _ = try await scene.startApp(["--fetch-result", "hang", "--time-limit", "1"])
            let app = try #require(scene.app)
            app.send(SIGTSTP)
            #expect(await Self.waitStopped(app.pid))
            let started = Date()
            _ = try scene.courier(["fetch", "simulate", "PushProbe"])
            #expect(await scene.waitFor("fetch")?["state"] as? String == "background")
            // The handler never answers: after the 1 s limit the app ends the fetch as an overrun and is suspended.
            #expect(await Self.waitStopped(app.pid))
            #expect(Date().timeIntervalSince(started) >= 1)
            var fetches: [IPCMessage.AppSummary.Fetch] = []
            for _ in 0..<50 where fetches.isEmpty {
                fetches = try scene.apps().first { $0.app == "PushProbe" }?.lastFetches ?? []
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(fetches.map(\.outcome) == ["overrun"])
        } catch {
            Issue.record(error)
        }
        try await scene.finish()
    }

    @Test("the device token survives a restart of courierd, pushes to it still reach the app, and are dropped once it is force-quit")
    func tokenSurvivesRestart() async throws {
        let scene = try await Scene()
        do {
            let token = try await scene.startApp()
            scene.app?.send(SIGKILL)
            _ = scene.app?.wait(timeout: .seconds(10))
            #expect(scene.daemon.stop() == .exited(0))
            try scene.daemon.start()
            #expect(try scene.apps().first { $0.app == "PushProbe" }?.deviceToken == token)
            let push = try scene.courier(["push", token, "-n"])
            #expect(String(decoding: push.standardOutput, as: UTF8.self).contains("delivered"))
            #expect(await scene.waitFor("push") != nil)
            #expect(await scene.waitFor("exit") != nil)
            // Force-quit by the user: not launched for pushes any more; they are accepted and dropped.
            #expect(try scene.courier(["kill", "PushProbe"]).termination == .exited(0))
            try await Task.sleep(for: .seconds(1))
            let dropped = try scene.courier(["push", token, "-n"])
            #expect(
                dropped.termination == .exited(0),
                "courier push: \(String(decoding: dropped.standardError, as: UTF8.self))"
            )
            #expect(String(decoding: dropped.standardOutput, as: UTF8.self).contains("dropped"))
            #expect(scene.entries("launched").count == 2, "a force-quit app was launched for a push")
        } catch {
            Issue.record(error)
        }
        try await scene.finish()
    }

    @Test(
        "an alert push is shown as a desktop notification and does not wake the app",
        .enabled(if: DesktopNotificationTests.toolsPresent, "needs dbus-daemon, dbus-monitor and gdbus")
    )
    func alertPush() async throws {
        let bus = try PrivateBus()
        let watch = try NotificationWatch(bus)
        let scene = try await Scene(environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        do {
            let token = try await scene.startApp()
            try await Task.sleep(for: .milliseconds(300))
            let push = try scene.courier(["push", token, "--alert", "New episode"])
            #expect(String(decoding: push.standardOutput, as: UTF8.self).contains("shown"))
            var text = ""
            for _ in 0..<100 where !text.contains("New episode") {
                try await Task.sleep(for: .milliseconds(100))
                text = watch.text
            }
            #expect(text.contains("member=Notify"), "dbus-monitor saw: \(text)")
            #expect(text.contains("string \"New episode\""))
            #expect(scene.entries("push").isEmpty, "an alert without content-available woke the app")
        } catch {
            Issue.record(error)
        }
        try await scene.finish()
    }

    @Test("courierd fetches on its schedule, records each fetch, and backs off an app that finds nothing")
    func scheduledFetches() async throws {
        let scene = try await Scene(daemonArguments: ["--relaunch-delay", "0", "--fetch-minimum-interval", "2"])
        do {
            _ = try await scene.startApp(["--fetch-result", "noData"])
            // Not while the user looks at it: in the foreground for 3 s (more than the 2 s interval), no fetch.
            try await Task.sleep(for: .seconds(3))
            #expect(scene.entries("fetch").isEmpty, "an app in the foreground was fetched")
            let app = try #require(scene.app)
            app.send(SIGTSTP)
            // Suspended: each fetch resumes it in the background (2 s, then 4 s after the first noData).
            #expect(await scene.waitFor("fetch", skipping: 1, timeout: 30) != nil)
            #expect(scene.entries("fetch").allSatisfy { $0["state"] as? String == "background" }, "\(RelaunchTests.entries(scene.log))")
            #expect(await Self.waitStopped(app.pid))
            let probe = try #require(try scene.apps().first { $0.app == "PushProbe" })
            #expect(probe.running)
            #expect(probe.fetchInterval == 0)
            #expect(probe.lastFetches.count >= 2)
            #expect(probe.lastFetches.allSatisfy { $0.outcome == "noData" })
            // Two answers without data: the interval has doubled twice.
            #expect((probe.effectiveInterval ?? 0) >= 8)
            #expect(probe.nextFetchReason?.contains("backed off") == true)
            let table = String(decoding: try scene.courier(["apps"]).standardOutput, as: UTF8.self)
            #expect(table.contains("PushProbe") && table.contains("noData"))
        } catch {
            Issue.record(error)
        }
        try await scene.finish()
    }

    @Test("the HTTP endpoint answers as APNs; bad pushes never reach the app; a burst is coalesced")
    func httpEndpoint() async throws {
        let scene = try await Scene(daemonArguments: ["--relaunch-delay", "0", "--push-port", "0"])
        let session = Session(configuration: .ephemeral)
        do {
            let token = try await scene.startApp()
            let portFile = scene.daemon.runtime.appendingPathComponent("push-port")
            let port = try #require(Int(String(decoding: try Data(contentsOf: portFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
            func post(_ body: String, token: String = token, path: String? = nil, method: String = "POST", headers: [String: String] = [:]) async throws -> (Int, String) {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path ?? "/3/device/\(token)")")!)
                request.httpMethod = method
                request.httpBody = method == "POST" ? Data(body.utf8) : nil
                for (name, value) in headers {
                    request.setValue(value, forHTTPHeaderField: name)
                }
                let (data, response) = try await session.data(for: request)
                let http = try #require(response as? HTTPURLResponse)
                let reason = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["reason"] as? String
                return (http.statusCode, reason ?? (http.value(forHTTPHeaderField: "apns-id") ?? ""))
            }
            let silent = #"{"aps":{"content-available":1},"content-id":"7"}"#
            #expect(try await post(silent, token: String(repeating: "ab", count: 32)) == (400, "BadDeviceToken"))
            #expect(try await post(silent, token: "nothex").0 == 400)
            #expect(try await post("{not json") == (400, "BadPayload"))
            #expect(try await post(#"{"content-id":"7"}"#) == (400, "MissingAps"))
            #expect(try await post(#"{"aps":{}}"#) == (400, "BadPayload"))
            let large = #"{"aps":{"content-available":1},"x":""# + String(repeating: "a", count: 5000) + #""}"#
            #expect(try await post(large) == (413, "PayloadTooLarge"))
            #expect(try await post(silent, headers: ["apns-priority": "10"]) == (400, "BadPriority"))
            #expect(try await post(silent, path: "/3/nothing") == (404, "BadPath"))
            #expect(try await post("", method: "GET") == (405, "MethodNotAllowed"))
            #expect(scene.entries("push").isEmpty, "a bad push reached the app")

            // A request cut short (the client sends part of a head, then closes its side): 400, at once.
            let cut = try Self.connect(toLoopbackPort: port, sending: "POST /3/device/\(token) HTTP/1.1\r\n")
            shutdown(cut, Int32(SHUT_WR))
            #expect(Self.readAll(cut).hasPrefix("HTTP/1.1 400 "))
            close(cut)
            // Clients that send part of a request and wait hold no thread of courierd's: with 100 of them connected,
            // courierd has about as many threads as before, and a push is still answered.
            let pid = try #require(scene.daemon.pid)
            let threadsBefore = try Self.threads(of: pid)
            var waiting: [Int32] = []
            for _ in 0..<100 {
                waiting.append(try Self.connect(toLoopbackPort: port, sending: "POST /3/device/\(token) HTTP/1.1\r\n"))
            }
            try await Task.sleep(for: .milliseconds(500))
            let threadsWith = try Self.threads(of: pid)
            #expect(threadsWith < threadsBefore + 10, "courierd had \(threadsBefore) threads, \(threadsWith) with 100 clients")
            #expect(try await post("", method: "GET") == (405, "MethodNotAllowed"))
            waiting.forEach { close($0) }

            let accepted = try await post(silent, headers: ["apns-push-type": "background", "apns-priority": "5", "apns-id": "11111111-2222-3333-4444-555555555555"])
            #expect(accepted == (200, "11111111-2222-3333-4444-555555555555"))
            #expect(await scene.waitFor("push")?["content-id"] as? String == "7")

            // A burst of 50: delivered at most as the budget allows (3 in the bucket, one used), the rest coalesced.
            let burstStart = Date()
            let burst = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await post(#"{"aps":{"content-available":1},"content-id":"8"}"#).0 }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(burst.allSatisfy { $0 == 200 })
            try await Task.sleep(for: .seconds(1))
            let deliveries = scene.entries("push").count - 1
            print("push burst: 50 pushes in \(String(format: "%.2f", Date().timeIntervalSince(burstStart) - 1)) s → \(deliveries) deliveries")
            #expect((1...2).contains(deliveries), "50 pushes in a burst made \(deliveries) deliveries")

            let refused = try scene.courier(["push", String(repeating: "0", count: 64), "-n"])
            #expect(refused.termination != .exited(0))
            #expect(String(decoding: refused.standardError, as: UTF8.self).contains("BadDeviceToken"))
        } catch {
            Issue.record(error)
        }
        session.invalidateAndCancel()
        try await scene.finish()
    }

    /// A TCP connection to 127.0.0.1:`port` that has sent `text`.
    static func connect(toLoopbackPort port: Int, sending text: String) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard descriptor >= 0, connected == 0, send(descriptor, text, text.utf8.count, Int32(MSG_NOSIGNAL)) > 0 else {
            let code = POSIXErrorCode(rawValue: errno) ?? .EIO
            close(descriptor)
            throw POSIXError(code)
        }
        return descriptor
    }

    /// What the peer sends until it closes (10 s at most).
    static func readAll(_ descriptor: Int32) -> String {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var text = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let count = recv(descriptor, &buffer, buffer.count, 0), count > 0 {
            text.append(buffer, count: count)
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The threads of process `pid` (`Threads:` in its status).
    static func threads(of pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Threads:") })
        return try #require(Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)))
    }
}
