import CourierConcurrency
public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests that run curl, `sha256sum` or the lifecycle probe.
///
/// Why not Foundation's `Process`: in Swift 6.3.1 every `Process().run()` that runs to termination leaks (a
/// reference cycle inside swift-corelibs-foundation, so LeakSanitizer fails `scripts/sanitize.sh address`), and its
/// `Process.run` reads past a buffer while it lists `/proc/self/fd` (`findMaximumOpenFromProcSelfFD`, an ASan
/// heap-buffer-overflow, and a crash once the test process holds over ~1,300 descriptors). This type holds no
/// Foundation object, no run loop and no reference cycle.
///
/// How a child is started:
/// - **Executable**: an absolute path, run as it is (no `PATH` search); `argv[0]` is that path.
/// - **Environment**: exactly the `[String: String]` given (pass `ProcessInfo.processInfo.environment` to inherit).
/// - **Descriptors**: the child gets 0, 1 and 2 as asked (`/dev/null`, this process's own, or a pipe) and nothing
///   else: every other descriptor is closed in the child (`posix_spawn_file_actions_addclosefrom_np(3)`), so no
///   socket of the test server or pipe of another child stays open in it. This process's ends of the pipes are
///   made with `pipe2(O_CLOEXEC)`, so a child spawned concurrently by another thread never inherits them either
///   (a pipe's write end inherited by the wrong child would hold off end of file).
/// - **Signals**: the child starts with every signal at its default disposition and an empty signal mask
///   (`posix_spawnattr_setsigdefault` / `setsigmask`) whatever the spawning thread blocks or this process
///   ignores, so SIGTERM, SIGTSTP, SIGPIPE… reach it as they would from a shell.
/// - **Process group**: a new one, the child's own (as Foundation's `Process` does), so a signal meant for the
///   test process's group (Ctrl-C in a terminal) is not also delivered to the child directly.
///
/// Threads, all detached, each ending on its own: one per output pipe (blocking `read` until end of file), one
/// writing the standard input bytes, and one that waits for the child (`waitid`) and reaps it. A child is always
/// reaped, whether or not anyone waits for it and even if this object is gone first; this object owns nothing
/// those threads need, so dropping it neither blocks nor leaks.
///
/// *Finished* means the child has been reaped **and** every output pipe has reached end of file, so that whoever
/// waits has seen all the output (a grandchild that keeps a pipe open holds `wait` off too, as with a shell's
/// `$(…)`). The termination is recorded exactly once; every wait, however many and whenever they start, gets it.
///
/// `Sendable` (checked): every stored property is a `let` of a `Sendable` type; the mutable state lives in
/// ``Monitor``, whose own `@unchecked Sendable` is justified there.
public final class ChildProcess: Sendable {
    /// How the child ended.
    public enum Termination: Sendable, Hashable, CustomStringConvertible {
        /// It called `exit` (or returned from `main`) with this status (0…255).
        case exited(Int32)
        /// It was terminated by this signal.
        case signalled(Int32)

        /// The shell's `$?`: the exit status, or 128 + the signal number.
        public var shellStatus: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signalled(let signal): "signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// The child's standard input.
    public enum Input: Sendable {
        /// `/dev/null`: reads end of file at once.
        case nullDevice
        /// This process's own standard input.
        case inherit
        /// A pipe: a thread of its own writes these bytes, then closes it. If the child exits (or closes its
        /// standard input) first, the rest is dropped: the writer sees `EPIPE`; SIGPIPE is blocked on its thread.
        case bytes(Data)
    }

    /// Where the child's standard output or standard error goes.
    public enum Output: Sendable {
        /// `/dev/null`.
        case nullDevice
        /// This process's own descriptor (1 or 2).
        case inherit
        /// A pipe read on a thread of its own: `handler` gets each chunk as it is read (up to 64 KiB, in order), then
        /// one empty `Data` at end of file, last. Calls never overlap; they all return before the child counts as
        /// finished. `handler` must not wait for this child to finish.
        case stream(@Sendable (Data) -> Void)
    }

    /// A child that could not be started: which call failed, and its `errno`.
    public struct SpawnError: Error, CustomStringConvertible {
        public var executable: String
        public var operation: String
        public var code: Int32

        public var description: String {
            "cannot start \(executable): \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// Everything a child printed, and how it ended (``run(_:arguments:environment:standardInput:)``).
    public struct Completed: Sendable {
        public var termination: Termination
        public var standardOutput: Data
        public var standardError: Data
    }

    /// The child's process ID. It stays the child's (it cannot be reused) until the child is reaped; use
    /// ``send(_:)`` to signal it, which checks that under the lock.
    public let pid: pid_t

    /// The executable's path, as given.
    public let executable: String

    /// The arguments after `argv[0]`, as given.
    public let arguments: [String]

    private let monitor: Monitor<State>

    /// Starts `executable` (an absolute path) with `arguments`, in exactly `environment`.
    ///
    /// Throws ``SpawnError`` if a pipe, a thread or the child itself cannot be made (a missing or non-executable
    /// file is `posix_spawn` failing with `ENOENT` or `EACCES`).
    public init(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String],
        standardInput: Input = .nullDevice,
        standardOutput: Output = .nullDevice,
        standardError: Output = .nullDevice
    ) throws {
        self.executable = executable
        self.arguments = arguments
        func failure(_ operation: String, _ code: Int32) -> SpawnError {
            SpawnError(executable: executable, operation: operation, code: code)
        }

        // Every descriptor this process opens for the child; closed on every path out of here except those whose
        // ownership passes to a thread (set to -1 here when it does).
        var stdinPipe: (read: Int32, write: Int32) = (-1, -1)
        var stdoutPipe: (read: Int32, write: Int32) = (-1, -1)
        var stderrPipe: (read: Int32, write: Int32) = (-1, -1)
        defer {
            for fd in [stdinPipe.read, stdinPipe.write, stdoutPipe.read, stdoutPipe.write, stderrPipe.read,
                stderrPipe.write] where fd >= 0 {
                close(fd)
            }
        }
        func makePipe() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [-1, -1]
            guard GNU.pipe2(&fds, O_CLOEXEC) == 0 else {
                throw failure("pipe2", errno)
            }
            return (fds[0], fds[1])
        }
        if case .bytes = standardInput { stdinPipe = try makePipe() }
        if case .stream = standardOutput { stdoutPipe = try makePipe() }
        if case .stream = standardError { stderrPipe = try makePipe() }

        // File actions, run in the child in this order: 0, 1, 2 set up, then everything from 3 up closed. `dup2`
        // clears FD_CLOEXEC on the copy (glibc ≥ 2.29 even when source and target are the same descriptor).
        var actions = posix_spawn_file_actions_t()
        var result = posix_spawn_file_actions_init(&actions)
        guard result == 0 else { throw failure("posix_spawn_file_actions_init", result) }
        defer { posix_spawn_file_actions_destroy(&actions) }
        func addNullDevice(_ target: Int32, _ flags: Int32) throws {
            let result = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", flags, 0)
            guard result == 0 else { throw failure("posix_spawn_file_actions_addopen", result) }
        }
        func addDup(_ source: Int32, _ target: Int32) throws {
            let result = posix_spawn_file_actions_adddup2(&actions, source, target)
            guard result == 0 else { throw failure("posix_spawn_file_actions_adddup2", result) }
        }
        switch standardInput {
        case .nullDevice: try addNullDevice(STDIN_FILENO, O_RDONLY)
        case .inherit: break
        case .bytes: try addDup(stdinPipe.read, STDIN_FILENO)
        }
        for (output, pipe, target) in [
            (standardOutput, stdoutPipe, STDOUT_FILENO), (standardError, stderrPipe, STDERR_FILENO),
        ] {
            switch output {
            case .nullDevice: try addNullDevice(target, O_WRONLY)
            case .inherit: break
            case .stream: try addDup(pipe.write, target)
            }
        }
        // Also closes the pipes' own descriptors in the child (they are close-on-exec anyway) and whatever else
        // this process has open without FD_CLOEXEC.
        result = GNU.posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        guard result == 0 else { throw failure("posix_spawn_file_actions_addclosefrom_np", result) }

        var attributes = posix_spawnattr_t()
        result = posix_spawnattr_init(&attributes)
        guard result == 0 else { throw failure("posix_spawnattr_init", result) }
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        result = posix_spawnattr_setsigmask(&attributes, &noSignals)
        guard result == 0 else { throw failure("posix_spawnattr_setsigmask", result) }
        result = posix_spawnattr_setsigdefault(&attributes, &allSignals)
        guard result == 0 else { throw failure("posix_spawnattr_setsigdefault", result) }
        result = posix_spawnattr_setpgroup(&attributes, 0)
        guard result == 0 else { throw failure("posix_spawnattr_setpgroup", result) }
        result = posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)
        )
        guard result == 0 else { throw failure("posix_spawnattr_setflags", result) }

        // argv and envp as NUL-terminated C strings, freed once posix_spawn has returned (the child has exec'd or
        // failed by then: glibc spawns with CLONE_VFORK and reports exec errors as posix_spawn's result).
        let argv = CStringArray([executable] + arguments)
        defer { argv.free() }
        let envp = CStringArray(environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        defer { envp.free() }

        var pid = pid_t()
        result = posix_spawn(&pid, executable, &actions, &attributes, argv.pointers, envp.pointers)
        guard result == 0 else { throw failure("posix_spawn", result) }
        self.pid = pid
        let spawned = pid

        // The child's ends belong to the child now; closing ours lets end of file (and EPIPE) happen.
        for fd in [stdinPipe.read, stdoutPipe.write, stderrPipe.write] where fd >= 0 {
            close(fd)
        }
        stdinPipe.read = -1
        stdoutPipe.write = -1
        stderrPipe.write = -1

        let openOutputs = [stdoutPipe.read, stderrPipe.read].filter { $0 >= 0 }.count
        let monitor = Monitor(State(openOutputs: openOutputs))
        self.monitor = monitor

        // The reaper first: once it runs, the child is reaped whatever fails below.
        do {
            try TestThread.start(name: "cp-\(spawned)-wait") { Self.reap(spawned, monitor) }
        } catch {
            kill(spawned, SIGKILL)
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) == -1 && errno == EINTR {}
            throw failure("pthread_create", error.code)
        }
        do {
            if case .stream(let handler) = standardOutput {
                let fd = stdoutPipe.read
                try TestThread.start(name: "cp-\(spawned)-out") { Self.read(fd, into: handler, monitor) }
                stdoutPipe.read = -1
            }
            if case .stream(let handler) = standardError {
                let fd = stderrPipe.read
                try TestThread.start(name: "cp-\(spawned)-err") { Self.read(fd, into: handler, monitor) }
                stderrPipe.read = -1
            }
            if case .bytes(let bytes) = standardInput {
                let fd = stdinPipe.write
                try TestThread.start(name: "cp-\(spawned)-in") { Self.write(bytes, to: fd) }
                stdinPipe.write = -1
            }
        } catch {
            // The child is killed; the reaper reaps it and the readers already started see end of file. The `defer`
            // above closes the descriptors no thread took.
            self.send(SIGKILL)
            throw failure("pthread_create", error.code)
        }
    }

    /// How the child ended, once it has finished (reaped, and end of file on every output pipe); nil before.
    public var termination: Termination? {
        self.monitor.withLock { $0.finished }
    }

    /// Waits, without blocking a thread, until the child has finished (exited or been killed, and every output
    /// pipe read to the end). Not cancellable: to stop waiting early, end the child (``send(_:)``).
    public func wait() async -> Termination {
        await withCheckedContinuation { (continuation: CheckedContinuation<Termination, Never>) in
            let finished = self.monitor.withLock { state -> Termination? in
                if let finished = state.finished {
                    return finished
                }
                state.waiters.append(continuation)
                return nil
            }
            if let finished {
                continuation.resume(returning: finished)
            }
        }
    }

    /// Blocks the calling thread until the child has finished, or `timeout` has passed (then nil).
    public func wait(timeout: Duration) -> Termination? {
        self.monitor.wait(timeout: timeout) { $0.finished }
    }

    /// Sends `signal` to the child, unless it has been reaped already (then its pid may belong to another
    /// process, and nothing is sent). True if the signal was sent.
    @discardableResult
    public func send(_ signal: Int32) -> Bool {
        self.monitor.withLock { state in
            state.termination == nil && kill(self.pid, signal) == 0
        }
    }

    /// Runs `executable` to the end, collecting its standard output and standard error, without blocking a thread.
    public static func run(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String],
        standardInput: Input = .nullDevice
    ) async throws -> Completed {
        let (child, collector) = try collecting(executable, arguments, environment, standardInput)
        let termination = await child.wait()
        return collector.completed(termination)
    }

    /// Runs `executable` to the end, collecting its standard output and standard error, blocking the calling
    /// thread for up to `timeout`; past that the child is killed (SIGKILL) and this throws
    /// ``TimedOut``.
    public static func run(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String],
        standardInput: Input = .nullDevice,
        timeout: Duration
    ) throws -> Completed {
        let (child, collector) = try collecting(executable, arguments, environment, standardInput)
        guard let termination = child.wait(timeout: timeout) else {
            child.send(SIGKILL)
            _ = child.wait(timeout: .seconds(5))
            throw TimedOut(executable: executable, arguments: arguments, timeout: timeout)
        }
        return collector.completed(termination)
    }

    /// A child whose standard output and standard error go to a ``Collector`` (the two `run`s).
    private static func collecting(
        _ executable: String,
        _ arguments: [String],
        _ environment: [String: String],
        _ standardInput: Input
    ) throws -> (ChildProcess, Collector) {
        let collector = Collector()
        let child = try ChildProcess(
            executable,
            arguments: arguments,
            environment: environment,
            standardInput: standardInput,
            standardOutput: .stream { chunk in collector.standardOutput.withLock { $0.append(chunk) } },
            standardError: .stream { chunk in collector.standardError.withLock { $0.append(chunk) } }
        )
        return (child, collector)
    }

    /// A child that ``run(_:arguments:environment:standardInput:timeout:)`` gave up on.
    public struct TimedOut: Error, CustomStringConvertible {
        public var executable: String
        public var arguments: [String]
        public var timeout: Duration

        public var description: String {
            "\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout); killed"
        }
    }
}

// MARK: - State and threads

extension ChildProcess {
    /// What the threads and the waiters share, always under the monitor's lock.
    fileprivate struct State: Sendable {
        /// Set once, by the reaper, in the same critical section that reaps the child.
        var termination: Termination?
        /// Output pipes not yet at end of file.
        var openOutputs: Int
        /// Async waiters, resumed (outside the lock) once finished.
        var waiters: [CheckedContinuation<Termination, Never>] = []

        init(openOutputs: Int) {
            self.openOutputs = openOutputs
        }

        var finished: Termination? {
            self.openOutputs == 0 ? self.termination : nil
        }

        /// Takes the async waiters if finished, to be resumed after unlocking.
        mutating func takeWaitersIfFinished() -> (Termination, [CheckedContinuation<Termination, Never>])? {
            guard let finished = self.finished else {
                return nil
            }
            defer { self.waiters = [] }
            return (finished, self.waiters)
        }
    }

    /// The reaper thread: waits for the child to exit without reaping it (`WNOWAIT`: the zombie keeps the pid
    /// from being reused), then reaps it and records the termination in one critical section, so that ``send(_:)``,
    /// which checks under the same lock, never signals a reused pid.
    fileprivate static func reap(_ pid: pid_t, _ monitor: Monitor<State>) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 {
            let code = errno
            // ECHILD: something else reaped our child (a `waitpid(-1)`, or SIGCHLD set to SIG_IGN). Nothing here
            // can recover the status, and every wait would hang: fail loudly instead.
            precondition(code == EINTR, "ChildProcess: waitid(\(pid)) failed: \(String(cString: strerror(code)))")
        }
        let resume = monitor.withLock { state in
            var status: Int32 = 0
            var reaped: pid_t
            repeat {
                reaped = waitpid(pid, &status, 0)  // returns at once: the child is a zombie already
            } while reaped == -1 && errno == EINTR
            precondition(reaped == pid, "ChildProcess: waitpid(\(pid)) failed: \(String(cString: strerror(errno)))")
            // <sys/wait.h>'s macros, which Swift does not import: the low 7 bits are the terminating signal, 0 for
            // a normal exit, whose status is the next 8 bits. (Stopped children are not reported: no WUNTRACED.)
            let signal = status & 0x7f
            state.termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            monitor.broadcast()
            return state.takeWaitersIfFinished()
        }
        if let (termination, waiters) = resume {
            for waiter in waiters {
                waiter.resume(returning: termination)
            }
        }
    }

    /// A reader thread: blocking reads until end of file (or an error, taken as the end), each chunk to `handler`,
    /// then the empty chunk, then the descriptor closed and the pipe counted as done.
    fileprivate static func read(_ fd: Int32, into handler: @Sendable (Data) -> Void, _ monitor: Monitor<State>) {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = Glibc.read(fd, buffer, capacity)
            if count > 0 {
                handler(Data(bytes: buffer, count: count))
            } else if count == -1 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        handler(Data())
        close(fd)
        let resume = monitor.withLock { state in
            state.openOutputs -= 1
            monitor.broadcast()
            return state.takeWaitersIfFinished()
        }
        if let (termination, waiters) = resume {
            for waiter in waiters {
                waiter.resume(returning: termination)
            }
        }
    }

    /// The standard input thread: writes `bytes`, then closes the pipe. SIGPIPE is blocked on this thread, so a
    /// child that stops reading makes `write` fail with EPIPE rather than kill the test process; the SIGPIPE
    /// that is then pending on this thread is taken off before the thread ends.
    fileprivate static func write(_ bytes: Data, to fd: Int32) {
        var sigpipe = sigset_t()
        sigemptyset(&sigpipe)
        sigaddset(&sigpipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &sigpipe, nil)
        var brokenPipe = false
        bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, base + offset, raw.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno != EINTR {
                    brokenPipe = errno == EPIPE
                    return
                }
            }
        }
        close(fd)
        if brokenPipe {
            var now = timespec()
            _ = sigtimedwait(&sigpipe, nil, &now)
        }
    }
}

/// The output of a ``ChildProcess/run(_:arguments:environment:standardInput:)`` call, appended to by the reader
/// threads and read once the child has finished.
fileprivate final class Collector: Sendable {
    let standardOutput = LockedValue(Data())
    let standardError = LockedValue(Data())

    func completed(_ termination: ChildProcess.Termination) -> ChildProcess.Completed {
        ChildProcess.Completed(
            termination: termination,
            standardOutput: self.standardOutput.withLock { $0 },
            standardError: self.standardError.withLock { $0 }
        )
    }
}

// MARK: - Lock, condition and threads

/// A value behind a `pthread_mutex_t`, with a `pthread_cond_t` on `CLOCK_MONOTONIC` for timed waits (like
/// ``LockedValue``, pthread-based so that ThreadSanitizer sees it; `LockedValue` has no condition).
///
/// `@unchecked Sendable`: `value` is only read or written inside ``withLock(_:)`` or ``wait(timeout:until:)``, with
/// `mutex` held; `mutex` and `condition` are allocated once, never moved, and destroyed only in `deinit`, when no
/// other reference exists. `Value` is `Sendable`, so nothing taken out of the lock is unsafe elsewhere.
fileprivate final class Monitor<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        var result = pthread_mutex_init(self.mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        defer { pthread_condattr_destroy(&attributes) }
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        self.condition = .allocate(capacity: 1)
        self.condition.initialize(to: pthread_cond_t())
        result = pthread_cond_init(self.condition, &attributes)
        precondition(result == 0, "pthread_cond_init failed: \(result)")
    }

    deinit {
        pthread_cond_destroy(self.condition)
        self.condition.deinitialize(count: 1)
        self.condition.deallocate()
        pthread_mutex_destroy(self.mutex)
        self.mutex.deinitialize(count: 1)
        self.mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return try body(&self.value)
    }

    /// Wakes every ``wait(timeout:until:)``; call inside ``withLock(_:)`` after changing the value.
    func broadcast() {
        pthread_cond_broadcast(self.condition)
    }

    /// Blocks until `done` returns a value (checked under the lock, again after every broadcast), or `timeout` has
    /// passed; then returns what `done` returns.
    func wait<Result>(timeout: Duration, until done: (Value) -> Result?) -> Result? {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = max(timeout, .zero).components
        deadline.tv_sec += Int(seconds)
        deadline.tv_nsec += Int(attoseconds / 1_000_000_000)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        while true {
            if let result = done(self.value) {
                return result
            }
            let waited = pthread_cond_timedwait(self.condition, self.mutex, &deadline)
            if waited == ETIMEDOUT {
                return done(self.value)
            }
        }
    }
}

/// A NUL-terminated array of `strdup`ed C strings, for `posix_spawn`'s `argv` and `envp`; ``free()`` releases it.
private struct CStringArray {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    let count: Int

    init(_ strings: [String]) {
        self.count = strings.count
        self.pointers = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() {
            (self.pointers + index).initialize(to: strdup(string))
        }
        (self.pointers + strings.count).initialize(to: nil)
    }

    func free() {
        for index in 0..<self.count {
            Glibc.free(self.pointers[index])
        }
        self.pointers.deinitialize(count: self.count + 1)
        self.pointers.deallocate()
    }
}
