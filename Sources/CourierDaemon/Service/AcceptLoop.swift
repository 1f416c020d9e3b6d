#if canImport(Glibc)
import Glibc
#endif

/// Accepting on a listening socket, for courierd's Unix socket and the push endpoint alike.
enum AcceptLoop {
    /// Accepts connections until the listener is shut down (or fails), or `accepted` returns false. Each descriptor
    /// is made close-on-exec before `accepted` gets it (`accept4` is hidden by Glibc's module map, which needs
    /// _GNU_SOURCE; and a process courierd spawns closes every descriptor but its standard ones anyway).
    static func run(on listener: Int32, _ accepted: (Int32) -> Bool) {
        while true {
            let descriptor = accept(listener, nil, nil)
            if descriptor < 0 {
                if errno == EINTR || errno == ECONNABORTED {
                    continue
                }
                return
            }
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            if !accepted(descriptor) {
                return
            }
        }
    }
}
