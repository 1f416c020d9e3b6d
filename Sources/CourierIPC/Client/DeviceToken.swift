package import Foundation

/// Device tokens as courierd hands them out: 32 random bytes, written as 64 lowercase hexadecimal digits (the form
/// `courier push` and the HTTP endpoint's `/3/device/<token>` take).
package enum DeviceToken {
    package static let length = 32

    /// A new random token, in hex.
    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex(Data((0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    package static func hex(_ data: Data) -> String {
        data.withUnsafeBytes(HexDigits.string)
    }

    /// The bytes of a token in hex; nil when it is not one (wrong length, not hex).
    package static func data(fromHex text: String) -> Data? {
        let digits = Array(text.utf8)
        guard digits.count == length * 2 else {
            return nil
        }
        var bytes = Data(capacity: length)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
