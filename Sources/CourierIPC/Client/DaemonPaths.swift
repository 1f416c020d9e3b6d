package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where one user's courierd lives: its socket and lock under the runtime directory, its journal under the state
/// directory (`docs/ipc.md`; docs/daemon.md).
package struct DaemonPaths: Sendable, Equatable {
    /// `$XDG_RUNTIME_DIR/courier`, or `/tmp/courier-<uid>` when the variable is unset. Mode 0700.
    package var runtimeDirectory: URL
    /// `$XDG_STATE_HOME/courier`, or `~/.local/state/courier`. Mode 0700.
    package var stateDirectory: URL

    package var socket: URL { runtimeDirectory.appendingPathComponent("courierd.sock", isDirectory: false) }
    /// Held (`flock`) by the running daemon: two racing starters yield one daemon.
    package var lockFile: URL { runtimeDirectory.appendingPathComponent("courierd.lock", isDirectory: false) }
    package var journal: URL { stateDirectory.appendingPathComponent("journal.sqlite", isDirectory: false) }
    /// Transfers write here (a `courier-session-*` directory per session run); leftovers of an earlier run are
    /// adopted or deleted at start.
    package var staging: URL { stateDirectory.appendingPathComponent("staging", isDirectory: true) }
    /// Partial downloads kept between attempts (a session's `resumeDataDirectory`).
    package var partials: URL { stateDirectory.appendingPathComponent("partial", isDirectory: true) }
    /// Finished downloads, until their app acknowledged the `downloaded` event.
    package var downloads: URL { stateDirectory.appendingPathComponent("downloads", isDirectory: true) }
    /// The daemon's copies of upload bodies, until their task ends.
    package var uploads: URL { stateDirectory.appendingPathComponent("uploads", isDirectory: true) }
    /// The standard output and error of the apps courierd launches in the background, one file per app
    /// (`courier logs APP`).
    package var appLogs: URL { stateDirectory.appendingPathComponent("logs", isDirectory: true) }

    /// The log of `app`'s background launches (its name with `/` made `_`).
    package func appLog(of app: String) -> URL {
        appLogs.appendingPathComponent(app.replacingOccurrences(of: "/", with: "_") + ".log", isDirectory: false)
    }

    package init(runtimeDirectory: URL, stateDirectory: URL) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
    }

    /// The paths for user `uid` with `environment` and home directory `home`. Relative XDG values are ignored, as
    /// the XDG base directory specification says.
    package static func resolve(environment: [String: String], uid: uid_t, home: String) -> DaemonPaths {
        func absolute(_ name: String) -> String? {
            guard let value = environment[name], value.hasPrefix("/") else {
                return nil
            }
            return value
        }
        let runtime = absolute("XDG_RUNTIME_DIR").map { URL(fileURLWithPath: $0).appendingPathComponent("courier") }
            ?? URL(fileURLWithPath: "/tmp/courier-\(uid)")
        let state = URL(fileURLWithPath: absolute("XDG_STATE_HOME") ?? "\(home)/.local/state")
            .appendingPathComponent("courier")
        return DaemonPaths(runtimeDirectory: runtime, stateDirectory: state)
    }

    /// The paths of the user running this process.
    package static var current: DaemonPaths {
        resolve(
            environment: ProcessInfo.processInfo.environment,
            uid: getuid(),
            home: FileManager.default.homeDirectoryForCurrentUser.path
        )
    }

    /// Creates both directories (mode 0700) and checks that they are private: a directory this user does not own, or
    /// that others can enter, is refused (someone could otherwise place a socket where the app looks for courierd).
    package func prepare(uid: uid_t = getuid()) throws(DaemonSetupError) {
        for directory in [runtimeDirectory, stateDirectory] {
            var info = stat()
            // Whatever is already there is judged as it is (a symlink is not followed); only a missing directory is
            // made.
            if lstat(directory.path, &info) != 0 {
                do {
                    // Flushed: the state directory's name must survive a power cut with the journal in it.
                    try DurableDirectory.make(directory)
                } catch {
                    throw .cannotCreate(path: directory.path, reason: "\(error)")
                }
                guard lstat(directory.path, &info) == 0 else {
                    throw .cannotCreate(path: directory.path, reason: String(cString: strerror(errno)))
                }
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw .unsafeDirectory(path: directory.path, reason: "not a directory")
            }
            guard info.st_uid == uid else {
                throw .unsafeDirectory(path: directory.path, reason: "owned by uid \(info.st_uid), not \(uid)")
            }
            guard info.st_mode & 0o077 == 0 else {
                throw .unsafeDirectory(
                    path: directory.path,
                    reason: "mode \(String(info.st_mode & 0o777, radix: 8)) lets others in (0700 expected)"
                )
            }
        }
    }
}

/// Why courierd cannot set up its files.
package enum DaemonSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotCreate(path: String, reason: String)
    /// The directory exists but is not this user's private directory.
    case unsafeDirectory(path: String, reason: String)
    /// Another courierd holds the lock.
    case alreadyRunning(lockFile: String)

    package var description: String {
        switch self {
        case .cannotCreate(let path, let reason): "cannot create \(path): \(reason)"
        case .unsafeDirectory(let path, let reason): "refusing \(path): \(reason)"
        case .alreadyRunning(let lockFile): "another courierd holds \(lockFile)"
        }
    }
}
