#if canImport(Glibc)
import Glibc
#endif

/// Three glibc functions that `<spawn.h>`, `<unistd.h>` and `<pthread.h>` declare only under `_GNU_SOURCE`, which
/// Swift's Glibc module is not built with (and a package required by version cannot pass `-D_GNU_SOURCE`). They are
/// looked up once, by name, in the process's global scope (`dlsym(RTLD_DEFAULT, …)`), which finds a sanitizer's
/// interceptor first when there is one, as a direct call would.
enum GNU {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>?) -> Int32

    private static func symbol<Function>(_ name: String, as type: Function.Type) -> Function {
        // RTLD_DEFAULT is the null handle.
        guard let address = dlsym(nil, name) else {
            fatalError("glibc has no \(name) (glibc 2.34 or later is needed)")
        }
        return unsafeBitCast(address, to: type)
    }

    /// `pipe2(2)` (glibc 2.9): both descriptors made with O_CLOEXEC atomically, so that no child spawned by another
    /// thread in between inherits them, as `pipe` + `fcntl` would allow.
    static let pipe2 = symbol("pipe2", as: Pipe2.self)

    /// `posix_spawn_file_actions_addclosefrom_np(3)` (glibc 2.34): closes every descriptor from the given one up in
    /// the child (`close_range(2)` where the kernel has it).
    static let posix_spawn_file_actions_addclosefrom_np = symbol(
        "posix_spawn_file_actions_addclosefrom_np",
        as: AddCloseFrom.self
    )

    /// `pthread_setname_np(3)`: the name shown by debuggers, `top -H` and sanitizer reports.
    static let pthread_setname_np = symbol("pthread_setname_np", as: SetName.self)
}
