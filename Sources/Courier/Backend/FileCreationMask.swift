import Foundation

#if canImport(Glibc)
package import Glibc
#endif

/// The process's file-creation mask (umask), read without changing it: `umask(2)` can only be read by setting it,
/// which would race with other threads creating files, so it is read from `/proc/self/status` (Linux 4.7 and
/// later), else taken as the usual 022. The library gives the files it hands over this mode; the `courier` tool too.
package enum FileCreationMask {
    package static var current: mode_t {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let mask = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        else {
            return 0o022
        }
        return mask
    }

    /// The mode a file this process creates gets: 0666 less the mask, as it was when first asked (read once: a
    /// background download is placed with it each time, and a process rarely changes its umask).
    package static let fileMode: mode_t = 0o666 & ~current
}
