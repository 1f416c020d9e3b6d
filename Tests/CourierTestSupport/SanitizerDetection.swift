#if canImport(Glibc)
import Glibc
#endif

/// True when the test binary runs under AddressSanitizer or ThreadSanitizer. Tests that bound time,
/// memory or the load the test server can take scale their bounds with it (sanitized code runs 2–15×
/// slower and uses several times the memory); they never skip their checks.
public let runningUnderSanitizer: Bool = {
    guard let handle = dlopen(nil, RTLD_NOW) else {
        return false
    }
    defer { dlclose(handle) }
    return dlsym(handle, "__tsan_init") != nil || dlsym(handle, "__asan_init") != nil
}()
