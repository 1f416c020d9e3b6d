import Foundation

/// SHA-1 (FIPS 180-4), for the one place the WebSocket handshake needs it (`Sec-WebSocket-Accept`, RFC 6455 §4.2.2):
/// not a digest of integrity, and never used as one.
enum SHA1 {
    static func hash(_ message: Data) -> Data {
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        var padded = message
        padded.append(0x80)
        while padded.count % 64 != 56 {
            padded.append(0)
        }
        let bits = UInt64(message.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) {
            padded.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        var words = [UInt32](repeating: 0, count: 80)
        padded.withUnsafeBytes { bytes in
            for block in stride(from: 0, to: bytes.count, by: 64) {
                for i in 0 ..< 16 {
                    let at = block + i * 4
                    words[i] = UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8
                        | UInt32(bytes[at + 3])
                }
                for i in 16 ..< 80 {
                    let mixed = words[i - 3] ^ words[i - 8] ^ words[i - 14] ^ words[i - 16]
                    words[i] = mixed << 1 | mixed >> 31
                }
                var (a, b, c, d, e) = state
                for i in 0 ..< 80 {
                    let (f, k): (UInt32, UInt32) =
                        switch i {
                        case 0 ..< 20: ((b & c) | (~b & d), 0x5A82_7999)
                        case 20 ..< 40: (b ^ c ^ d, 0x6ED9_EBA1)
                        case 40 ..< 60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                        default: (b ^ c ^ d, 0xCA62_C1D6)
                        }
                    let next = (a << 5 | a >> 27) &+ f &+ e &+ k &+ words[i]
                    (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, next)
                }
                state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
            }
        }
        var digest = Data(capacity: 20)
        for word in [state.0, state.1, state.2, state.3, state.4] {
            digest.append(contentsOf: [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16),
                                       UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)])
        }
        return digest
    }
}
