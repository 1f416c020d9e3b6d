import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The pipe on which the session that started courierd waits for it to listen (`DaemonLauncher`): its descriptor is
/// named by `COURIERD_READY_FD`. courierd writes one byte once it listens and closes the pipe; a courierd that stops at
/// start closes it by exiting, without a word.
enum ReadinessPipe {
    /// Says that courierd listens, once; nothing when courierd was not started with a readiness pipe. The variable is
    /// removed, so that the apps courierd relaunches do not take it as theirs.
    static func say() {
        guard let named = getenv(DaemonLauncher.readinessVariable) else {
            return
        }
        let descriptor = Int32(String(cString: named)) ?? -1
        unsetenv(DaemonLauncher.readinessVariable)
        var info = stat()
        // Only a pipe: a number inherited from elsewhere must not make courierd write into another file.
        guard descriptor >= 0, fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else {
            return
        }
        var byte: UInt8 = 1
        _ = write(descriptor, &byte, 1)
        close(descriptor)
    }
}
