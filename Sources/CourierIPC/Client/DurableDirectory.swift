package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Directories whose entries survive a power cut: a name (a new file, a rename, a new directory) is on disk once the
/// directory holding it has been flushed (`fsync` of the directory), not before (docs/reliability.md).
package enum DurableDirectory {
    /// Creates `url` and whatever parents it lacks (mode `mode`), flushing the parent of each directory made so that
    /// the new names survive a power cut. Nothing is done for a directory that exists. Throws the failing call's
    /// `errno` as a `POSIXError`.
    package static func make(_ url: URL, mode: mode_t = 0o700) throws {
        var missing: [String] = []
        var path = url.standardizedFileURL.path
        var info = stat()
        while path != "/", !path.isEmpty, stat(path, &info) != 0 {
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for directory in missing.reversed() {
            if mkdir(directory, mode) != 0, errno != EEXIST {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            sync((directory as NSString).deletingLastPathComponent)
        }
    }

    /// Flushes a directory's entries (a rename or a new file in it). Returns whether the flush succeeded.
    @discardableResult
    package static func sync(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return false
        }
        defer { close(descriptor) }
        return fsync(descriptor) == 0
    }
}
