import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// systemd's socket activation (`sd_listen_fds(3)`): a listening socket courierd did not make, passed as descriptor 3
/// with `LISTEN_PID` (this process) and `LISTEN_FDS=1` in the environment. The socket unit owns the socket file
/// (`courier daemon install` writes it): courierd serves on it and leaves the file in place when it stops.
enum SocketActivation {
    /// The first passed descriptor.
    static let firstDescriptor: Int32 = 3

    /// The listening socket systemd passed to this process, made close-on-exec, with the variables removed (children
    /// must not take them as theirs); nil when none was passed.
    static func inheritedListener(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32? {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
            environment["LISTEN_FDS"].flatMap(Int.init) == 1
        else {
            return nil
        }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        var info = stat()
        guard fstat(firstDescriptor, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
            return nil
        }
        _ = fcntl(firstDescriptor, F_SETFD, FD_CLOEXEC)
        return firstDescriptor
    }
}
