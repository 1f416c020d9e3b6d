/// Bytes as lower-case hex, two digits a byte, written into one buffer: how a digest is journaled as text, a device
/// token is shown and a unique file name is made. (A `String(format: "%02x")` per byte was 1.5 % of courierd's CPU in
/// W6, where each finished download's digest is journaled as text.)
package enum HexDigits {
    package static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        let digits: StaticString = "0123456789abcdef"
        return digits.withUTF8Buffer { digits in
            String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
                for (offset, byte) in bytes.enumerated() {
                    buffer[2 * offset] = digits[Int(byte >> 4)]
                    buffer[2 * offset + 1] = digits[Int(byte & 0x0F)]
                }
                return bytes.count * 2
            }
        }
    }
}
