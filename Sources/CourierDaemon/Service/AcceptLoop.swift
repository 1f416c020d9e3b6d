#if canImport(Glibc)
import Glibc
#endif

/// Accepting on courierd's Unix socket, on the thread that runs ``DaemonServer/run()`` (the push endpoint accepts with
/// a read source instead: ``PushEndpoint``).
enum AcceptLoop {
    /// Accepts connections until the listener is shut down (or fails), `stop` becomes readable, or `accepted`
    /// returns false. Each descriptor is made close-on-exec before `accepted` gets it (`accept4` is hidden by Glibc's
    /// module map, which needs _GNU_SOURCE; and a process courierd spawns closes every descriptor but its standard
    /// ones anyway). `stop` is how a listener that must not be shut down (systemd's, shared with it) is left.
    static func run(on listener: Int32, stoppedBy stop: Int32? = nil, _ accepted: (Int32) -> Bool) {
        while true {
            if let stop {
                var watched = [
                    pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
                ]
                if poll(&watched, 2, -1) < 0 {
                    if errno == EINTR {
                        continue
                    }
                    return
                }
                if watched[1].revents != 0 || watched[0].revents & Int16(POLLIN) == 0 {
                    return
                }
            }
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
