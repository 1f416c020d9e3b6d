import CSupport
import CourierTestSupport
import Foundation
import Testing

/// The engine's SHA-256 and SHA-512 (`CSupport/src/sha2.c`) against swift-crypto's, at every padding boundary; its
/// CRC-32C (`CSupport/src/crc32c.c`) against the bit-by-bit definition.
@Suite("C engine: file digests")
struct DigestTests {
    static let lengths = [0, 1, 3, 55, 56, 63, 64, 65, 111, 112, 119, 120, 127, 128, 129, 1000, 262_143, 262_145]

    static func hex(_ path: String, length: Int, _ kind: cr_digest_t) -> String? {
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = cr_file_digest(path, Int64(length), kind, &bytes)
        return count == 0 ? nil : bytes.prefix(count).map { String(format: "%02x", $0) }.joined()
    }

    @Test("cr_file_digest equals swift-crypto's SHA-256 and SHA-512 for lengths around each block boundary")
    func matchesSwiftCrypto() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-digest-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        for length in Self.lengths {
            let body = TestServer.bytes(count: length, seed: length)
            try body.write(to: file)
            #expect(Self.hex(file.path, length: length, CR_DIGEST_SHA256) == TestServer.sha256Hex(body), "\(length)")
            #expect(Self.hex(file.path, length: length, CR_DIGEST_SHA512) == TestServer.sha512Hex(body), "\(length)")
        }
        // A prefix of the file, and a file shorter than asked for.
        #expect(Self.hex(file.path, length: 10, CR_DIGEST_SHA256) == TestServer.sha256Hex(
            TestServer.bytes(count: Self.lengths.last!, seed: Self.lengths.last!).prefix(10)))
        #expect(Self.hex(file.path, length: Self.lengths.last! + 1, CR_DIGEST_SHA256) == nil)
        #expect(Self.hex("/nonexistent/courier", length: 0, CR_DIGEST_SHA256) == nil)
        #expect(Self.hex(file.path, length: 0, CR_DIGEST_NONE) == nil)
    }

    /// CRC-32C one bit at a time (reflected, polynomial 0x82F63B78), in hex as the engine writes it (big-endian).
    static func crc32cHex(_ bytes: Data) -> String {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82f6_3b78 : crc >> 1
            }
        }
        return String(format: "%08x", ~crc)
    }

    @Test("cr_file_digest's CRC-32C is the standard one: the check value, and the bit-by-bit definition at every length")
    func crc32c() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-crc-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("123456789".utf8).write(to: file)
        #expect(Self.hex(file.path, length: 9, CR_DIGEST_CRC32C) == "e3069283")
        // Around the three-stream blocks of the SSE4.2 path too (3 × 256 and 3 × 8192 bytes).
        for length in Self.lengths + [7, 8, 9, 15, 16, 17, 767, 768, 769, 24_575, 24_576, 24_577, 49_160] {
            let body = TestServer.bytes(count: length, seed: length + 7)
            try body.write(to: file)
            #expect(Self.hex(file.path, length: length, CR_DIGEST_CRC32C) == Self.crc32cHex(body), "\(length)")
        }
    }
}
