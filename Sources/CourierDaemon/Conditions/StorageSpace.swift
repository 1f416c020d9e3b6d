package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Room on the file system courierd writes downloads to: a download that ran out of it (`ENOSPC`) waits, keeping its
/// partial file, until there is enough again (WorkManager's storage-not-low constraint), looked at with the other
/// conditions (every `--condition-poll` seconds).
package enum StorageSpace {
    /// Kept free beyond what a waiting download still needs, so that the journal can still commit when it has
    /// written its last byte.
    package static let reserve: Int64 = 1 << 20

    /// The bytes an unprivileged process may still write on the file system holding `url` (`statvfs`'s
    /// `f_bavail`), or nil when it cannot be read.
    package static func available(at url: URL) -> Int64? {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else {
            return nil
        }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// What a download that ran out of space needs free before it goes on: the rest of its entity and the reserve
    /// (the reserve alone when its length is not known).
    package static func needed(received: Int64, expectedToReceive: Int64) -> Int64 {
        max(0, expectedToReceive - received) + reserve
    }

    /// Why a download that needs `needed` bytes waits, with `available` free at `url`; nil when it may go on.
    package static func waitingReason(needed: Int64, available: Int64?, at url: URL) -> String? {
        guard let available, available < needed else {
            return nil
        }
        let format = ByteCountFormatter.string(fromByteCount:countStyle:)
        return "waiting for free space: \(format(available, .binary)) free on the file system of \(url.path), "
            + "\(format(needed, .binary)) needed (insufficientSpace)"
    }
}
