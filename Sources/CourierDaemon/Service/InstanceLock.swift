package import Courier

#if canImport(Glibc)
import Glibc
#endif

/// The lock that makes one courierd per user: an exclusive `flock` on the lock file, held for as long as this value
/// lives (and released by the kernel when the process dies, however it dies).
///
/// `@unchecked Sendable`: the descriptor is written once in `init` and closed once in `deinit`.
package final class InstanceLock: @unchecked Sendable {
    private let descriptor: Int32

    /// Takes the lock, or throws ``DaemonSetupError/alreadyRunning(lockFile:)`` at once when another holder has it.
    package init(path: String) throws(DaemonSetupError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .cannotCreate(path: path, reason: String(cString: strerror(errno)))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            close(descriptor)
            if failure == EWOULDBLOCK {
                throw .alreadyRunning(lockFile: path)
            }
            throw .cannotCreate(path: path, reason: String(cString: strerror(failure)))
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}
