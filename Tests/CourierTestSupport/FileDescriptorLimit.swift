#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Raises the process's soft open-file limit towards the hard limit, so that a stress test with
/// thousands of sockets (client and server in one process) is not cut short by a default of 1024.
enum FileDescriptorLimit {
    /// The soft limit wanted; never above the hard limit.
    static let wanted: rlim_t = 65_536

    static func raise() {
        var limit = rlimit()
        #if os(Linux)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return }
        let target = min(wanted, limit.rlim_max)
        guard limit.rlim_cur < target else { return }
        limit.rlim_cur = target
        _ = setrlimit(resource, &limit)
    }
}
