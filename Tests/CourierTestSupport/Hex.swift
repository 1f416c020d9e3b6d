import Crypto
public import Foundation

/// Lower-case hexadecimal.
enum Hex {
    static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}

extension TestServer {
    /// The lower-case hex SHA-256 of `data`, as `/upload` answers it.
    public static func sha256Hex(_ data: Data) -> String {
        Hex.encode(SHA256.hash(data: data))
    }

    /// The lower-case hex SHA-512 of `data`.
    public static func sha512Hex(_ data: Data) -> String {
        Hex.encode(SHA512.hash(data: data))
    }
}
