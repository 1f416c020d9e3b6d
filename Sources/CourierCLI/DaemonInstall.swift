import ArgumentParser
import Courier
import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `courier daemon install|uninstall|start`: courierd as a user service. Install places the binary in `~/.local/bin`;
/// where systemd is, it writes and enables a socket unit that owns courierd's socket (systemd starts courierd at the
/// first connection, and again after a crash) and a service enabled at login (courierd goes on with queued transfers
/// after a reboot without waiting for a client). `--linger` keeps the user's manager, and courierd, running after
/// logout. Without a user manager running now, courierd is started directly (the units take effect at the next
/// login, where a manager runs then); `courier` commands and background sessions start it whenever none answers.
extension Daemon {
    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install courierd for this user: ~/.local/bin/courierd, started at login where systemd runs.",
            discussion: """
                Where systemd is installed, writes courierd.socket and courierd.service in \
                ~/.config/systemd/user and enables both: courierd starts at login and goes on with queued transfers, \
                and at the first connection if it stopped. With a user manager running, it starts them now; without \
                one (a container, a session without systemd --user), it starts courierd directly. With --linger, \
                `loginctl enable-linger` keeps the user's manager running after logout, so transfers go on after \
                the last session ends and start at boot. Elsewhere, or with --no-systemd, it places the binary and \
                starts courierd; `courier` commands and background sessions start it again when none answers.
                """
        )

        @Option(help: "The courierd to install (default: $COURIERD, beside courier, or on PATH).")
        var courierd: String?

        @Flag(help: "Do not use systemd even where it is installed: place the binary and start courierd.")
        var noSystemd = false

        @Flag(help: "Keep courierd running after logout and start it at boot (loginctl enable-linger).")
        var linger = false

        func validate() throws {
            if linger && noSystemd {
                throw ValidationError(
                    "--linger keeps systemd's user manager running: it does not go with --no-systemd."
                )
            }
        }

        func run() throws {
            let source = try courierd ?? DaemonLauncher.executable().orThrow(
                "no courierd found ($COURIERD, beside courier, PATH): build it with `swift build --product courierd`"
            )
            let installed = UserService.binary
            try UserService.place(source, at: installed)
            print("installed \(installed.path)")
            guard !noSystemd, UserService.systemdInstalled else {
                try UserService.startDirectly(installed.path)
                print("courier commands and background sessions start courierd when none answers")
                return
            }
            try UserService.writeUnits(executable: installed.path)
            // `enable` only links the units into sockets.target and default.target: it needs no running manager.
            try UserService.systemctl(["enable", "courierd.socket", "courierd.service"], quiet: true)
            print("enabled courierd.socket and courierd.service: courierd starts at login and resumes queued transfers")
            if UserService.systemdRuns {
                try UserService.systemctl(["daemon-reload"])
                // A courierd started by hand holds the lock, and systemd's would stop at once: it stops, and its
                // transfers go on in systemd's.
                UserService.stopRunning()
                try UserService.systemctl(["start", "courierd.socket", "courierd.service"])
                print("started courierd.service")
            } else {
                print("no systemd user manager answers now: the units take effect at the next login; starting courierd")
                try UserService.startDirectly(installed.path)
            }
            if linger {
                try UserService.enableLinger()
            }
        }
    }

    struct Uninstall: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop courierd and remove what `courier daemon install` placed (the journal stays)."
        )

        func run() throws {
            if UserService.systemdInstalled, UserService.unitsInstalled {
                let now = UserService.systemdRuns ? ["--now"] : []
                _ = try? UserService.systemctl(["disable"] + now + ["courierd.socket", "courierd.service"], quiet: true)
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

    /// Whether systemd is installed (`systemctl` on PATH), running now or not: its units can be written and enabled.
    static var systemdInstalled: Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/systemctl") }
    }

    /// `loginctl enable-linger`: the user's manager runs from boot and after logout (systemd-logind's).
    static func enableLinger() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["loginctl", "enable-linger", NSUserName()]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailure(
                description: "loginctl enable-linger \(NSUserName()) failed (it needs systemd-logind; as another "
                    + "user, an administrator runs it): courierd runs while you are logged in"
            )
        }
        print(
            "enabled lingering: courierd starts at boot and goes on after logout (`loginctl disable-linger` undoes it)"
        )
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
