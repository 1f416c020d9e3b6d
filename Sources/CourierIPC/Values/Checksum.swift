public import Foundation

/// A digest of a downloaded file: what a download task expects (`DownloadTask.expectedChecksum`, `courier get
/// --checksum`) or what a server announced (`Repr-Digest`, `Content-Digest`, `Digest`). The engine computes the file's
/// digest while it writes it; a download whose digest differs fails with `CourierError.Code.checksumMismatch` and no
/// file is handed over.
public struct Checksum: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The hash functions the engine computes, named as RFC 9530 names them.
    public enum Algorithm: String, Sendable, Hashable, Codable, CaseIterable {
        case sha256 = "sha-256"
        case sha512 = "sha-512"
        /// CRC-32C (Castagnoli): no protection against a server or a network that means harm, only against bytes
        /// that did not reach the disk (what courierd checks after a power cut). RFC 9530 lists it as deprecated for
        /// HTTP; a response announcing it is still checked.
        case crc32c

        /// The digest's length in bytes.
        public var length: Int {
            switch self {
            case .sha256: 32
            case .sha512: 64
            case .crc32c: 4
            }
        }
    }

    public let algorithm: Algorithm
    /// The digest's bytes (32 for SHA-256, 64 for SHA-512).
    public let digest: Data

    /// A checksum of `digest`'s bytes, or nil when their number is not the algorithm's.
    public init?(_ algorithm: Algorithm, digest: Data) {
        guard digest.count == algorithm.length else {
            return nil
        }
        self.algorithm = algorithm
        self.digest = digest
    }

    /// `sha-256=HEX`, `sha-512=HEX` or `crc32c=HEX` (also `sha256:HEX`, as aria2 and Metalink write them;
    /// case-insensitive), or
    /// nil when `text` is not one of those with the right number of hex digits.
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let separator = trimmed.firstIndex(where: { $0 == "=" || $0 == ":" }) else {
            return nil
        }
        func plain(_ name: String) -> String {
            name.lowercased().replacingOccurrences(of: "-", with: "")
        }
        let name = plain(String(trimmed[..<separator]))
        let hex = trimmed[trimmed.index(after: separator)...]
        guard let algorithm = Algorithm.allCases.first(where: { plain($0.rawValue) == name }),
            let bytes = Self.bytes(hex: hex)
        else {
            return nil
        }
        self.init(algorithm, digest: bytes)
    }

    /// The digest in lower-case hex.
    public var hex: String {
        digest.withUnsafeBytes(HexDigits.string)
    }

    /// `sha-256=HEX`: what ``init(_:)-(String)`` reads.
    public var description: String {
        "\(algorithm.rawValue)=\(hex)"
    }

    private static func bytes(hex: Substring) -> Data? {
        guard hex.count % 2 == 0 else {
            return nil
        }
        var bytes = Data(capacity: hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else {
                return nil
            }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}

extension Checksum {
    /// The digests a response announces for the whole file (RFC 9530's `Repr-Digest`, `Content-Digest` of a
    /// 200, RFC 3230's `Digest`), in that order; unknown algorithms and malformed values are skipped.
    package static func announced(by head: ResponseHead) -> [Checksum] {
        var fields: [String] = []
        fields += head.value("Repr-Digest").map { [$0] } ?? []
        if head.status == 200 {
            fields += head.value("Content-Digest").map { [$0] } ?? []
        }
        fields += head.value("Digest").map { [$0] } ?? []
        return fields.flatMap { field in
            field.split(separator: ",").compactMap { member -> Checksum? in
                let parts = member.split(separator: "=", maxSplits: 1)
                guard parts.count == 2,
                    let algorithm = Algorithm(rawValue: parts[0].trimmingCharacters(in: .whitespaces).lowercased())
                else {
                    return nil
                }
                // RFC 9530 wraps the Base64 in colons (a structured-field byte sequence); RFC 3230 does not.
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                    .trimmingCharacters(in: CharacterSet(charactersIn: ":"))
                return Data(base64Encoded: value).flatMap { Checksum(algorithm, digest: $0) }
            }
        }
    }
}
