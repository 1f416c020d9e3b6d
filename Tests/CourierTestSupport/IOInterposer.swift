import CourierConcurrency
public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `Tests/Interposers/courier_io.c` built as a shared library, for the reliability tests that start courierd or the
/// `courier` tool with it preloaded: it records what the process does to its files (the power-loss tests) and makes
/// chosen calls fail with `ENOSPC` or `EIO` (the failing-I/O tests). See the source's opening comment for the
/// variables it reads; ``environment(root:trace:faults:)`` sets them.
public enum IOInterposer {
    /// One rule of `COURIER_IO_FAULT`: the `call`s (`write`, `sync`, `rename`, `open` of a new file) on files whose
    /// path contains `pathPart` fail with `error`, from the `from`-th such call (counted from 1), `count` times (0:
    /// every one from then on).
    public struct Fault: Sendable, CustomStringConvertible {
        public enum Call: String, Sendable { case write, sync, rename, open }
        public var call: Call
        public var error: String
        public var from: Int
        public var count: Int
        public var pathPart: String

        public init(_ call: Call, _ error: String, from: Int = 1, count: Int = 0, pathPart: String) {
            self.call = call
            self.error = error
            self.from = from
            self.count = count
            self.pathPart = pathPart
        }

        public var description: String { "\(call.rawValue):\(error):\(from):\(count):\(pathPart)" }
    }

    private static let built = LockedValue<Result<String, BuildError>?>(nil)

    public struct BuildError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The library's path, built with the toolchain's C compiler (clang, else cc) beside the test executable (in the
    /// build folder) on first use, again when the source is newer.
    public static func library() throws -> String {
        let result = built.withLock { cached -> Result<String, BuildError> in
            if let cached {
                return cached
            }
            let made = build()
            cached = made
            return made
        }
        return try result.get()
    }

    /// The variables that preload the library into a process and point it at `root` (only files under it are
    /// recorded or failed), recording to `trace` and failing by `faults`.
    public static func environment(root: URL, trace: URL? = nil, faults: [Fault] = []) throws -> [String: String] {
        var environment = ["LD_PRELOAD": try library(), "COURIER_IO_ROOT": root.path]
        if let trace {
            environment["COURIER_IO_TRACE"] = trace.path
        }
        if !faults.isEmpty {
            environment["COURIER_IO_FAULT"] = faults.map(\.description).joined(separator: ";")
        }
        return environment
    }

    private static func build() -> Result<String, BuildError> {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interposers/courier_io.c")
        let searchPath = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        let compiler = ["clang", "cc"].lazy.compactMap { name in
            searchPath.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }.first
        guard let compiler else {
            return .failure(BuildError(description: "no C compiler (clang or cc) on PATH"))
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let output = executable.deletingLastPathComponent().appendingPathComponent("courier_io.so").path
        let modified = { (path: String) in
            (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date
        }
        if let built = modified(output), let written = modified(source.path), built >= written {
            return .success(output)
        }
        // Built under another name and renamed: a process that finds the library finds it whole.
        let building = output + ".\(getpid())"
        do {
            let compiled = try ChildProcess.run(
                compiler,
                arguments: ["-std=gnu11", "-O1", "-shared", "-fPIC", "-o", building, source.path, "-ldl", "-lpthread"],
                environment: ProcessInfo.processInfo.environment,
                timeout: .seconds(120)
            )
            guard compiled.termination == .exited(0) else {
                let output = String(decoding: compiled.standardError, as: UTF8.self)
                return .failure(BuildError(description: "\(compiler) failed: \(output)"))
            }
        } catch {
            return .failure(BuildError(description: "\(compiler): \(error)"))
        }
        guard rename(building, output) == 0 else {
            return .failure(BuildError(description: "cannot rename \(building): errno \(errno)"))
        }
        return .success(output)
    }
}
