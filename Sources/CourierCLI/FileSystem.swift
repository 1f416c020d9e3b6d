import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few file operations `courier get` and `courier put` need, with the guarantees `get` promises: nothing is
/// overwritten unless asked, and a symbolic link counts as an existing file (it is never followed when checking).
enum FileSystem {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether anything (a file, a directory, a symbolic link, even a dangling one) exists at `url`.
    static func entryExists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }

    /// Whether `url` is a regular file (not following a symbolic link).
    static func isRegularFile(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The size of the regular file at `url`, or nil.
    static func fileSize(_ url: URL) -> Int64? {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return nil
        }
        return Int64(info.st_size)
    }

    /// The size of the file at `url` to upload (a symbolic link is followed), or why it cannot be read: it is
    /// missing, not a regular file (`is a directory`), or cannot be opened.
    static func readableFileSize(_ url: URL) -> Result<Int64, Failure> {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            return .failure(Failure(description: describe(errno: errno)))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFDIR:
            return .failure(Failure(description: "is a directory"))
        default:
            return .failure(Failure(description: "not a regular file"))
        }
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(Failure(description: describe(errno: errno)))
        }
        close(descriptor)
        return .success(Int64(info.st_size))
    }

    /// Creates `url` as a directory (and its parents, as `mkdir -p`) unless it is one already; the error names the
    /// path that failed and why, as the system says it ("Not a directory" under a file).
    static func makeDirectory(_ url: URL) throws(Failure) {
        let path = url.standardizedFileURL.path
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw Failure(description: "\(path) exists and is not a directory")
            }
            return
        }
        let missing = errno == ENOENT
        let parent = (path as NSString).deletingLastPathComponent
        if missing, !parent.isEmpty, parent != path {
            try makeDirectory(URL(fileURLWithPath: parent))
        }
        guard mkdir(path, 0o777) == 0 || errno == EEXIST else {
            throw Failure(description: "cannot create directory \(path): \(describe(errno: errno))")
        }
    }

    /// Whether `url` is an existing directory (a symbolic link to one counts).
    static func isDirectory(_ url: URL) -> Bool {
        var info = stat()
        return stat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Moves `source` to `destination`, replacing what is there (`--force`). Both must be on one file system.
    static func replace(_ destination: URL, with source: URL) throws(Failure) {
        if rename(source.path, destination.path) != 0 {
            let code = errno
            if code == EXDEV {
                do {
                    if entryExists(destination) {
                        try FileManager.default.removeItem(at: destination)
                    }
                    try FileManager.default.moveItem(at: source, to: destination)
                    return
                } catch {
                    throw Failure(description: "cannot move the download to \(destination.path): \(reason(error))")
                }
            }
            throw Failure(description: "cannot move the download to \(destination.path): \(describe(errno: code))")
        }
    }

    /// Moves `source` to `destination` only if nothing exists there; returns false (and leaves `source` alone)
    /// when something does. Uses `link` + `unlink`, which cannot overwrite, and falls back to a checked move on
    /// file systems without hard links.
    static func moveWithoutReplacing(_ source: URL, to destination: URL) throws(Failure) -> Bool {
        if link(source.path, destination.path) == 0 {
            unlink(source.path)
            return true
        }
        let code = errno
        if code == EEXIST {
            return false
        }
        guard code == EXDEV || code == EPERM || code == EOPNOTSUPP || code == EMLINK else {
            throw Failure(description: "cannot move the download to \(destination.path): \(describe(errno: code))")
        }
        if entryExists(destination) {
            return false
        }
        do {
            try FileManager.default.moveItem(at: source, to: destination)
            return true
        } catch {
            if entryExists(destination) {
                return false
            }
            throw Failure(description: "cannot move the download to \(destination.path): \(reason(error))")
        }
    }

    /// Whether `a` and `b` are one file: the same inode, or (across file systems, where a move is a copy) regular
    /// files of the same size and bytes.
    static func isSameFile(_ a: URL, _ b: URL) -> Bool {
        var first = stat()
        var second = stat()
        guard lstat(a.path, &first) == 0, lstat(b.path, &second) == 0,
            first.st_mode & S_IFMT == S_IFREG, second.st_mode & S_IFMT == S_IFREG
        else {
            return false
        }
        if first.st_dev == second.st_dev && first.st_ino == second.st_ino {
            return true
        }
        guard first.st_size == second.st_size, let left = FileHandle(forReadingAtPath: a.path),
            let right = FileHandle(forReadingAtPath: b.path)
        else {
            return false
        }
        defer {
            try? left.close()
            try? right.close()
        }
        while true {
            let chunk = (try? left.read(upToCount: 1 << 20)) ?? nil
            let other = (try? right.read(upToCount: 1 << 20)) ?? nil
            guard chunk == other else {
                return false
            }
            if chunk?.isEmpty ?? true {
                return true
            }
        }
    }

    /// Gives a downloaded file the mode a newly created file gets (0666 less the umask), as the library gives the
    /// files it hands over: also a partial file kept by an older courier, which made them 0600.
    static func applyDefaultPermissions(_ url: URL) {
        chmod(url.path, FileCreationMask.fileMode)
    }

    /// Removes `url` (a file or a whole directory) if it exists; errors are ignored (used for clean-up only).
    /// Tries again when something else removed part of a directory at the same time.
    static func removeIfPresent(_ url: URL) {
        for _ in 0..<3 where entryExists(url) {
            try? FileManager.default.removeItem(at: url)
        }
    }

    private static func describe(errno code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// The system's words for a Foundation file error: the POSIX error under it ("No such file or directory"), never
    /// a domain and a number.
    static func reason(_ error: any Error) -> String {
        var current: NSError? = error as NSError
        while let nsError = current {
            if nsError.domain == NSPOSIXErrorDomain {
                return describe(errno: Int32(nsError.code))
            }
            current = nsError.userInfo[NSUnderlyingErrorKey] as? NSError
        }
        return (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
    }
}
