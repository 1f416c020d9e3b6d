import ArgumentParser
import Courier
import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `courier daemon install|uninstall|start`: courierd as a user service. Where a systemd user manager runs, install
/// places the binary in `~/.local/bin` and a socket unit that owns courierd's socket (systemd starts courierd at the
/// first connection and again after a crash or a reboot); elsewhere it places the binary and starts courierd.
extension Daemon {
    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install courierd for this user: ~/.local/bin/courierd, and systemd --user units where they run."
        )

        @Option(help: "The courierd to install (default: $COURIERD, beside courier, or on PATH).")
        var courierd: String?

        @Flag(help: "Do not use systemd even where it runs: place the binary and start courierd.")
        var noSystemd = false

        func run() throws {
            let source = try courierd ?? DaemonLauncher.executable().orThrow(
                "no courierd found ($COURIERD, beside courier, PATH): build it with `swift build --product courierd`"
            )
            let installed = UserService.binary
            try UserService.place(source, at: installed)
            print("installed \(installed.path)")
            if !noSystemd, UserService.systemdRuns {
                try UserService.writeUnits(executable: installed.path)
                try UserService.systemctl(["daemon-reload"])
                try UserService.systemctl(["enable", "--now", "courierd.socket"])
                print("enabled courierd.socket (systemd --user starts courierd at the first connection)")
            } else {
                try UserService.startDirectly(installed.path)
            }
        }
    }

    struct Uninstall: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop courierd and remove what `courier daemon install` placed (the journal stays)."
        )

        func run() throws {
            if UserService.systemdRuns, UserService.unitsInstalled {
                _ = try? UserService.systemctl(["disable", "--now", "courierd.socket", "courierd.service"])
            }
            UserService.stopRunning()
            for file in [UserService.socketUnit, UserService.serviceUnit, UserService.binary]
            where FileManager.default.fileExists(atPath: file.path) {
                try FileManager.default.removeItem(at: file)
                print("removed \(file.path)")
            }
            if UserService.systemdRuns {
                _ = try? UserService.systemctl(["daemon-reload"])
            }
        }
    }

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start courierd (through systemd --user when it is installed there); nothing if it runs."
        )

        func run() throws {
            if UserService.systemdRuns, UserService.unitsInstalled {
                try UserService.systemctl(["start", "courierd.socket", "courierd.service"])
                print("started courierd.service")
            } else {
                // The installed courierd, unless $COURIERD names another.
                let installed = FileManager.default.isExecutableFile(atPath: UserService.binary.path)
                let chosen = ProcessInfo.processInfo.environment["COURIERD"] == nil && installed
                try UserService.startDirectly(chosen ? UserService.binary.path : nil)
            }
        }
    }
}

/// Where `courier daemon install` puts courierd, and how it talks to systemd.
enum UserService {
    /// `$HOME`, else the user's home directory from the password database.
    static var home: URL {
        ProcessInfo.processInfo.environment["HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser
    }

    static var binary: URL { home.appendingPathComponent(".local/bin/courierd") }

    static var unitDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            .map { URL(fileURLWithPath: $0) } ?? home.appendingPathComponent(".config")
        return config.appendingPathComponent("systemd/user")
    }

    static var socketUnit: URL { unitDirectory.appendingPathComponent("courierd.socket") }
    static var serviceUnit: URL { unitDirectory.appendingPathComponent("courierd.service") }

    static var unitsInstalled: Bool {
        FileManager.default.fileExists(atPath: socketUnit.path)
    }

    /// Whether this user's systemd manager answers.
    static var systemdRuns: Bool {
        (try? systemctl(["show-environment"], quiet: true)) != nil
    }

    /// Copies `source` to `destination` (executable), unless they are the same file.
    static func place(_ source: String, at destination: URL) throws {
        let from = URL(fileURLWithPath: source).resolvingSymlinksInPath()
        guard from.path != destination.resolvingSymlinksInPath().path else {
            return
        }
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        let staged = destination.appendingPathExtension("new")
        try? FileManager.default.removeItem(at: staged)
        try FileManager.default.copyItem(at: from, to: staged)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: staged.path)
        // A rename: a running courierd keeps its own (now unlinked) binary.
        guard rename(staged.path, destination.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: staged)
            throw CommandFailure(description: "cannot place \(destination.path): \(reason)")
        }
    }

    static func writeUnits(executable: String) throws {
        try FileManager.default.createDirectory(at: unitDirectory, withIntermediateDirectories: true)
        let socket = """
            # Written by `courier daemon install`: systemd owns courierd's socket and starts courierd at the first
            # connection (socket activation; courierd takes the descriptor and leaves the file in place).
            [Unit]
            Description=Courier background transfer service (socket)

            [Socket]
            ListenStream=%t/courier/courierd.sock
            SocketMode=0600
            DirectoryMode=0700

            [Install]
            WantedBy=sockets.target

            """
        let service = """
            # Written by `courier daemon install`.
            [Unit]
            Description=Courier background transfer service
            Requires=courierd.socket
            After=courierd.socket

            [Service]
            ExecStart=\(executable)
            # A second courierd of the same user exits 3 (one is already running): not a failure to restart for.
            SuccessExitStatus=3
            Restart=on-failure

            [Install]
            WantedBy=default.target

            """
        try socket.write(to: socketUnit, atomically: true, encoding: .utf8)
        try service.write(to: serviceUnit, atomically: true, encoding: .utf8)
        print("wrote \(socketUnit.path) and \(serviceUnit.path)")
    }

    /// Runs `systemctl --user arguments`; throws when it fails.
    @discardableResult
    static func systemctl(_ arguments: [String], quiet: Bool = false) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["systemctl", "--user"] + arguments
        if quiet {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailure(description: "systemctl --user \(arguments.joined(separator: " ")) failed")
        }
        return process.terminationStatus
    }

    /// Starts courierd — `executable`, else the one a session would find — unless one answers already, and says
    /// which runs.
    static func startDirectly(_ executable: String? = nil) throws {
        if let executable {
            // DaemonLauncher looks at $COURIERD first.
            setenv("COURIERD", executable, 1)
        }
        switch DaemonConnection.open(paths: DaemonPaths.current, app: "courier") {
        case .success(let connection):
            _ = connection.request { .listSessions(.init(request: $0)) }
            let pid = connection.welcome?.pid ?? connection.peer?.pid
            print("courierd is running (pid \(pid.map(String.init) ?? "?"))")
            connection.close()
        case .failure(let error):
            throw CommandFailure(description: error.message)
        }
    }

    /// Asks a running courierd to stop, and waits for its socket to go (at most 10 s).
    static func stopRunning() {
        guard case .success(let connection) = DaemonConnection.open(
            paths: DaemonPaths.current,
            app: "courier",
            startingDaemon: false
        ) else {
            return
        }
        _ = connection.request { .stopDaemon(.init(request: $0)) }
        connection.close()
        let deadline = Date().addingTimeInterval(10)
        let socket = DaemonPaths.current.socket.path
        while Date() < deadline, UnixSocket.connect(to: socket).map({ Glibc.close($0) }) != nil {
            usleep(50_000)
        }
        print("stopped courierd")
    }
}

extension Optional {
    /// The value, or a ``CommandFailure`` saying `message`.
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else {
            throw CommandFailure(description: message)
        }
        return self
    }
}
