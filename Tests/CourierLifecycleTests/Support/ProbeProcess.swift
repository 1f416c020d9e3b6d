import CourierTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A running `LifecycleProbe` (Tests/Fixtures/LifecycleProbe), started as a ``ChildProcess`` (not
/// Foundation's `Process`, which leaks in Swift 6.3.1), whose stdout and stderr lines are collected as
/// they arrive so that a test can wait for one. Every wait is bounded by a timeout and fails with what
/// the probe printed so far.
final class ProbeProcess: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Lines read from one pipe, with a condition variable to wait on.
    ///
    /// `@unchecked Sendable`: every stored property is read and written only with `condition` locked.
    final class Lines: @unchecked Sendable {
        private let condition = NSCondition()
        private var lines: [String] = []
        private var partial = ""
        private var closed = false

        /// Adds what was read; empty data means end of file.
        func append(_ data: Data) {
            self.condition.lock()
            defer {
                self.condition.broadcast()
                self.condition.unlock()
            }
            if data.isEmpty {
                self.closed = true
                if !self.partial.isEmpty {
                    self.lines.append(self.partial)
                    self.partial = ""
                }
                return
            }
            self.partial += String(decoding: data, as: UTF8.self)
            while let newline = self.partial.firstIndex(of: "\n") {
                self.lines.append(String(self.partial[..<newline]))
                self.partial = String(self.partial[self.partial.index(after: newline)...])
            }
        }

        var all: [String] {
            self.condition.lock()
            defer { self.condition.unlock() }
            return self.lines
        }

        /// Waits until `found` returns a value for the lines so far, or the pipe is closed with
        /// none found, or `deadline` passes.
        func wait<T>(until deadline: Date, for found: ([String]) -> T?) -> T? {
            self.condition.lock()
            defer { self.condition.unlock() }
            while true {
                if let value = found(self.lines) {
                    return value
                }
                if self.closed || !self.condition.wait(until: deadline) {
                    return found(self.lines)
                }
            }
        }
    }

    let stdout: Lines
    let stderr: Lines
    private let child: ChildProcess
    private let arguments: [String]

    var pid: pid_t {
        self.child.pid
    }

    /// Finds the probe next to the test bundle (the build products directory), or fails with how
    /// to build it. `COURIER_LIFECYCLE_PROBE` overrides the path.
    static func probeURL() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let override = environment["COURIER_LIFECYCLE_PROBE"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        var directories: [URL] = []
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        directories.append(executable.deletingLastPathComponent())
        directories.append(Bundle.main.bundleURL)
        directories.append(Bundle.main.bundleURL.deletingLastPathComponent())
        if let argument0 = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: argument0).deletingLastPathComponent())
        }
        var seen = Set<String>()
        directories = directories.filter { seen.insert($0.standardizedFileURL.path).inserted }
        for directory in directories {
            let candidate = directory.appendingPathComponent("LifecycleProbe")
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw Failure(
            description: """
                LifecycleProbe executable not found next to the test bundle (looked in \
                \(directories.map(\.path).joined(separator: ", "))). Build it with \
                `swift build --build-tests` (or `swift build --product LifecycleProbe`), \
                or set COURIER_LIFECYCLE_PROBE to its path.
                """
        )
    }

    /// Starts the probe with `arguments`, plus `environment` on top of this process's environment.
    /// Its stdout and stderr are read on threads of their own (ChildProcess's), into `stdout` and `stderr`.
    init(_ arguments: [String], environment extra: [String: String] = [:]) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["COURIER_BACKGROUND_LAUNCH"] = nil
        environment.merge(extra) { $1 }
        let stdout = Lines()
        let stderr = Lines()
        self.stdout = stdout
        self.stderr = stderr
        self.arguments = arguments
        self.child = try ChildProcess(
            try Self.probeURL().path,
            arguments: arguments,
            environment: environment,
            standardInput: .nullDevice,
            standardOutput: .stream { stdout.append($0) },
            standardError: .stream { stderr.append($0) }
        )
    }

    deinit {
        // Leave nothing behind: a probe still running (or stopped) is killed.
        if self.child.termination == nil {
            self.child.send(SIGKILL)
            self.child.send(SIGCONT)
            _ = self.child.wait(timeout: .seconds(5))
        }
    }

    /// Sends `signal` to the probe (nothing once it has been reaped).
    func send(_ signal: Int32) {
        self.child.send(signal)
    }

    /// Waits for a stdout line equal to `line` (or starting with it, if `prefix`), at index
    /// `from` or later; returns its index.
    @discardableResult
    func waitForLine(
        _ line: String,
        prefix: Bool = false,
        from start: Int = 0,
        timeout: Duration = .seconds(10)
    ) throws -> Int {
        let index = self.stdout.wait(until: Date() + timeout.timeInterval) { lines in
            start < lines.count ? lines[start...].firstIndex { prefix ? $0.hasPrefix(line) : $0 == line } : nil
        }
        guard let index else {
            throw Failure(description: "probe \(self.arguments) did not print \"\(line)\"\n\(self.transcript)")
        }
        return index
    }

    /// Waits for the process to exit, and for the readers to take in everything it wrote; returns its
    /// exit status (failing if it died of a signal).
    func waitForExit(timeout: Duration = .seconds(10)) throws -> Int32 {
        guard let termination = self.child.wait(timeout: timeout) else {
            throw Failure(description: "probe \(self.arguments) did not exit in time\n\(self.transcript)")
        }
        switch termination {
        case .exited(let status):
            return status
        case .signalled:
            throw Failure(description: "probe died of \(termination)\n\(self.transcript)")
        }
    }

    /// The process state letter from `/proc/PID/stat` ('R', 'S', 'T' for stopped, …), or nil once gone.
    func processState() -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(self.pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // "PID (comm) S …": the state follows the last ')' and a space.
        return stat[stat.index(after: close)...].first { $0 != " " }
    }

    /// Waits until `/proc/PID/stat` shows the state `matching` accepts (state changes have no event
    /// to wait on, so this polls every 2 ms, bounded by `timeout`).
    func waitForProcessState(
        _ description: String,
        timeout: Duration = .seconds(10),
        matching: (Character?) -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while !matching(self.processState()) {
            if ContinuousClock.now >= deadline {
                let state = self.processState().map { String($0) } ?? "gone"
                throw Failure(description: "probe never became \(description) (state \(state))\n\(self.transcript)")
            }
            usleep(2_000)
        }
    }

    /// Everything the probe printed so far, and its threads' signal state, for failure messages.
    var transcript: String {
        var text = "--- stdout ---\n\(self.stdout.all.joined(separator: "\n"))"
        text += "\n--- stderr ---\n\(self.stderr.all.joined(separator: "\n"))"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(self.pid)/task")) ?? []
        for task in tasks.sorted() {
            let status = (try? String(contentsOfFile: "/proc/\(self.pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            let fields = status.split(separator: "\n").filter {
                $0.hasPrefix("Name") || $0.hasPrefix("State") || $0.hasPrefix("Sig") || $0.hasPrefix("ShdPnd")
            }
            text += "\n--- thread \(task): " + fields.joined(separator: " | ")
        }
        return text
    }
}

extension Duration {
    /// In seconds, for `Date` and `DispatchTime` arithmetic.
    var timeInterval: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
