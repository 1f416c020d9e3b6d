import Foundation

/// A name no other file will have: 128 random bits as 32 hex digits, from `getrandom(2)` (the system's generator).
/// `UUID()` opens `/dev/urandom` for each one, and a download takes a name or two.
package enum UniqueFileName {
    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
