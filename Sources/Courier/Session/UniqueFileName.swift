import CourierConcurrency
import CourierIPC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A name no other file will have: 128 random bits as 32 hex digits, from `getrandom(2)` (the system's generator).
///
/// The bits are drawn 256 bytes at a time (16 names per system call; the kernel fills a request of up to 256 bytes
/// whole, never interrupted by a signal). A background download takes three names (the app's staging file, courierd's,
/// and courierd's hand-over): with two `getrandom` calls per name (`SystemRandomNumberGenerator` asks for 8 bytes at a
/// time) that was 60,000 system calls for 10,000 downloads. `UUID()` opens `/dev/urandom` for each one.
package enum UniqueFileName {
    private static let pool = LockedValue(RandomPool())

    package static func make() -> String {
        pool.withLock { $0.nextName() }
    }

    /// Random bytes drawn ahead, handed out 16 at a time.
    private struct RandomPool {
        private static let bytesPerName = 16
        private static let capacity = 256
        private var bytes = [UInt8](repeating: 0, count: RandomPool.capacity)
        private var used = RandomPool.capacity

        mutating func nextName() -> String {
            if used + RandomPool.bytesPerName > bytes.count {
                refill()
            }
            defer { used += RandomPool.bytesPerName }
            return bytes.withUnsafeBytes { bytes in
                HexDigits.string(UnsafeRawBufferPointer(rebasing: bytes[used..<used + RandomPool.bytesPerName]))
            }
        }

        /// glibc's `getrandom` (2.25 and later), looked up by name: Swift's Glibc module does not include
        /// `<sys/random.h>`.
        private static let getrandom = dlsym(nil, "getrandom").map {
            unsafeBitCast($0, to: (@convention(c) (UnsafeMutableRawPointer?, Int, UInt32) -> Int).self)
        }

        private mutating func refill() {
            let filled = bytes.withUnsafeMutableBytes { bytes in
                RandomPool.getrandom?(bytes.baseAddress, bytes.count, 0) ?? -1
            }
            if filled != bytes.count {
                // No `getrandom` (a kernel before 3.17, a seccomp filter): the standard library's generator, which
                // falls back as it must.
                var generator = SystemRandomNumberGenerator()
                for index in bytes.indices {
                    bytes[index] = generator.next()
                }
            }
            used = 0
        }
    }
}
