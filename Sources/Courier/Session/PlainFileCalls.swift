package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The file calls every transfer makes, without `FileManager` around them: to say a file's length, `FileManager` also
/// reads its owner's and group's names (opening `/etc/passwd` and `/etc/group`) and its extended attributes, and to
/// delete a file it asks for the working directory and looks at the path first. A background download made ten such
/// calls where one does (courierd's W6 run: 16 `stat`s, 11 `open`s and 2 `listxattr`s per task).
extension FileManager {
    /// The length of the file at `path` (`stat`, following a symbolic link), or nil when it cannot be read (gone, not
    /// permitted).
    package func fileLength(atPath path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return nil
        }
        return Int64(info.st_size)
    }

    /// Deletes the file at `url` (`unlink`): a staging file, a download handed over. Nothing happens when it is gone
    /// (the delegate moved it) or is a directory.
    package func removeFile(at url: URL) {
        _ = unlink(url.path)
    }

    /// Makes the directory at `url` with `mode` (less the umask), and its missing parents: one `mkdir` when it exists
    /// or only its last component is missing (a staging directory, asked for at every download), `FileManager`'s
    /// walk up the path otherwise.
    package func makeDirectory(at url: URL, mode: mode_t) throws {
        if mkdir(url.path, mode) == 0 || errno == EEXIST {
            return
        }
        try createDirectory(
            at: url,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: Int(mode)]
        )
    }
}
