package import Courier
package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Moving and flushing files so that what the journal says about them is true after a crash of the machine.
package enum DurableFile {
    /// Flushes the file at `path` to disk; returns its length as flushed (every byte before it is durable), or nil
    /// when it cannot be opened.
    package static func sync(_ path: String) -> Int64? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return nil
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            return nil
        }
        // The length is read before the flush: bytes appended after it are not claimed.
        let length = Int64(info.st_size)
        guard fsync(descriptor) == 0 else {
            return nil
        }
        return length
    }

    /// Flushes `source`, renames it to `destination` (same file system) and flushes the destination's directory, so
    /// that the new name survives a crash. With `flushing` false, it only renames: a ``FileFlusher`` batch flushes the
    /// bytes later, and the journal the name, with the commit that names it (``Journal/namedFile(in:)``). Throws
    /// `cannotMoveFile`.
    package static func move(_ source: URL, to destination: URL, flushing: Bool = true) throws(CourierError) {
        try move(source.path, to: destination.path, flushing: flushing)
    }

    /// ``move(_:to:flushing:)`` by paths. When the destination's directory is missing, `makeDirectory` makes it and
    /// the rename is tried once more: a caller that moves many files into one directory does not look for it each
    /// time.
    package static func move(
        _ source: String,
        to destination: String,
        flushing: Bool = true,
        makeDirectory: () throws -> Void = {}
    ) throws(CourierError) {
        guard !flushing || sync(source) != nil else {
            throw CourierError(.cannotMoveFile, "cannot flush \(source): \(String(cString: strerror(errno)))")
        }
        var renamed = rename(source, destination) == 0
        if !renamed && errno == ENOENT && access(source, F_OK) == 0 {
            do {
                try makeDirectory()
            } catch {
                throw CourierError(.cannotMoveFile, "cannot make the directory of \(destination): \(error)")
            }
            renamed = rename(source, destination) == 0
        }
        guard renamed else {
            throw CourierError(
                .cannotMoveFile,
                "cannot rename \(source) to \(destination): \(String(cString: strerror(errno)))"
            )
        }
        if flushing {
            DurableDirectory.sync((destination as NSString).deletingLastPathComponent)
        }
    }
}
