import CourierIPC
import Foundation

/// The file a store keeps in step with its contents (a cookie jar, the HSTS hosts, kept credentials): written whole and
/// atomically (a temporary file renamed over it), mode 0600. Saves run in order on a serial queue, each writing the
/// store's contents as they are when it runs, so a burst of changes ends with the file holding the last of them.
/// Only a store with a file has one: a store in memory makes no queue.
final class KeptFile: Sendable {
    let url: URL
    /// Whether a missing directory is made (0700) before a write: for the files Courier places in its state
    /// directory, not for a path the user named.
    private let makesDirectory: Bool
    private let queue: DispatchQueue

    init(_ url: URL, makesDirectory: Bool) {
        self.url = url
        self.makesDirectory = makesDirectory
        queue = DispatchQueue(label: "courier.kept-file")
    }

    /// `name` in Courier's state directory (`$XDG_STATE_HOME/courier`, else `~/.local/state/courier`), where the
    /// shared stores of ``SessionConfiguration/default`` keep their files.
    static func inStateDirectory(_ name: String) -> KeptFile {
        KeptFile(DaemonPaths.current.stateDirectory.appendingPathComponent(name), makesDirectory: true)
    }

    /// The file's text; nil when there is no file. Throws when it exists and cannot be read.
    func read() throws -> String? {
        do {
            return try String(contentsOf: url, encoding: .utf8)
        } catch CocoaError.fileReadNoSuchFile {
            return nil
        }
    }

    /// Writes what `contents` gives when the write runs, after every write asked for before. A failed write is
    /// dropped: the next change writes the whole file again.
    func save(_ contents: @escaping @Sendable () -> String) {
        queue.async { [self] in
            try? KeptFile.write(contents(), to: url, makingDirectory: makesDirectory)
        }
    }

    /// Returns once the writes asked for before the call are done.
    func flush() {
        queue.sync {}
    }

    /// Writes `text` as the file at `url` now: a temporary file beside it (0600), renamed over it.
    static func write(_ text: String, to url: URL, makingDirectory: Bool = false) throws {
        let directory = url.deletingLastPathComponent()
        if makingDirectory {
            try? FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        }
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        guard
            FileManager.default.createFile(
                atPath: temporary.path,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }
}
