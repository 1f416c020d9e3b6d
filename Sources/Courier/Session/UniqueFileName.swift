import CourierConcurrency
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
    /// Hex digits of one 64-bit word.
    private static let digitsPerWord = 16
    private static let pool = LockedValue(RandomPool())

    package static func make() -> String {
        let (high, low) = pool.withLock { $0.next() }
        return String(unsafeUninitializedCapacity: 2 * digitsPerWord) { buffer in
            write(high, into: buffer, at: 0)
            write(low, into: buffer, at: digitsPerWord)
            return 2 * digitsPerWord
        }
    }

    /// `value` as lower-case hex digits, most significant first, from `offset`.
    private static func write(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { digits in
            for index in 0..<digitsPerWord {
                buffer[offset + index] = digits[Int((value >> UInt64(60 - 4 * index)) & 0xF)]
            }
        }
    }

    /// Random bits drawn ahead, handed out 16 bytes at a time.
    private struct RandomPool {
        private static let capacity = 256
        private var words = [UInt64](repeating: 0, count: RandomPool.capacity / 8)
        private var used = RandomPool.capacity / 8

        mutating func next() -> (UInt64, UInt64) {
            if used + 2 > words.count {
                refill()
            }
            defer { used += 2 }
            return (words[used], words[used + 1])
        }

        /// glibc's `getrandom` (2.25 and later), looked up by name: Swift's Glibc module does not include
        /// `<sys/random.h>`.
        private static let getrandom = dlsym(nil, "getrandom").map {
            unsafeBitCast($0, to: (@convention(c) (UnsafeMutableRawPointer?, Int, UInt32) -> Int).self)
        }

        private mutating func refill() {
            let filled = words.withUnsafeMutableBytes { bytes in
                RandomPool.getrandom?(bytes.baseAddress, bytes.count, 0) ?? -1
            }
            if filled != words.count * 8 {
                // No `getrandom` (a kernel before 3.17, a seccomp filter): the standard library's generator, which
                // falls back as it must.
                var generator = SystemRandomNumberGenerator()
                for index in words.indices {
                    words[index] = generator.next()
                }
            }
            used = 0
        }
    }
}
