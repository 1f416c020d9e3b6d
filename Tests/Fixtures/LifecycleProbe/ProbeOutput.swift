#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Prints one lifecycle event as a line on standard output with a single unbuffered `write(2)`, so
/// that the process tests, which wait for lines on a pipe, see it whole and at once even if the
/// process is stopped or killed right after. Callable from any thread.
func emit(_ line: String) {
    writeAll(STDOUT_FILENO, line + "\n")
}

/// Writes a usage error on standard error.
func writeUsageError(_ message: String) {
    writeAll(STDERR_FILENO, "LifecycleProbe: \(message)\n")
}

private func writeAll(_ fileDescriptor: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(fileDescriptor, $0.baseAddress, $0.count) }
        if written > 0 {
            bytes = bytes.dropFirst(written)
        } else if written < 0 && errno == EINTR {
            continue
        } else {
            return
        }
    }
}
