import Foundation

/// The file name a response suggests in its `Content-Disposition` header (RFC 6266), as `curl -J` and
/// `wget --content-disposition` use it.
///
/// Both parameters are read: `filename*` (RFC 5987: `UTF-8''na%C3%AFve.txt`, or `ISO-8859-1''…`) wins over
/// `filename` (a token or a quoted string). The disposition type (`attachment`, `inline`) does not matter. The
/// name is the server's raw suggestion: whoever uses it makes it safe first (the `courier` tool's `FileNaming`).
/// Outside input: fuzzed (docs/reliability.md).
package enum ContentDisposition {
    /// The suggested file name in the header value `header`, or nil when there is none (or it is empty).
    package static func fileName(in header: String) -> String? {
        var plain: String?
        var extended: String?
        for (name, value) in parameters(of: header) {
            switch name.lowercased() {
            case "filename*":
                extended = extended ?? decodeExtendedValue(value)
            case "filename":
                plain = plain ?? value
            default:
                continue
            }
        }
        if let extended, !extended.isEmpty {
            return extended
        }
        if let plain, !plain.isEmpty {
            return plain
        }
        return nil
    }

    /// The `name=value` parameters after the disposition type, values unquoted, in order.
    static func parameters(of header: String) -> [(name: String, value: String)] {
        var scalars = Substring(header).unicodeScalars
        // Skip the disposition type.
        while let first = scalars.first, first != ";" {
            scalars.removeFirst()
        }
        var result: [(String, String)] = []
        while !scalars.isEmpty {
            skip(&scalars, while: { $0 == ";" || $0 == " " || $0 == "\t" })
            var name = String.UnicodeScalarView()
            while let first = scalars.first, first != "=", first != ";" {
                name.append(scalars.removeFirst())
            }
            guard scalars.first == "=" else {
                continue  // A parameter without a value: ignored.
            }
            scalars.removeFirst()
            skip(&scalars, while: { $0 == " " || $0 == "\t" })
            var value = String.UnicodeScalarView()
            if scalars.first == "\"" {
                scalars.removeFirst()
                while let first = scalars.first {
                    scalars.removeFirst()
                    if first == "\"" {
                        break
                    }
                    if first == "\\", let escaped = scalars.first {
                        scalars.removeFirst()
                        value.append(escaped)
                    } else {
                        value.append(first)
                    }
                }
                // Anything between the closing quote and the next ";" is ignored.
                while let first = scalars.first, first != ";" {
                    scalars.removeFirst()
                }
            } else {
                while let first = scalars.first, first != ";" {
                    value.append(scalars.removeFirst())
                }
            }
            let trimmedName = String(name).trimmingCharacters(in: .whitespaces)
            if !trimmedName.isEmpty {
                result.append((trimmedName, String(value).trimmingCharacters(in: .whitespaces)))
            }
        }
        return result
    }

    /// Decodes an RFC 5987 `ext-value` (`charset'language'percent-encoded`); nil for another charset or bytes
    /// that are not valid in the charset.
    static func decodeExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = percentDecodedBytes(parts[2]) else {
            return nil
        }
        switch parts[0].lowercased() {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }

    private static func percentDecodedBytes(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.popFirst().flatMap(hexValue), let low = utf8.popFirst().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func skip(
        _ scalars: inout Substring.UnicodeScalarView,
        while predicate: (Unicode.Scalar) -> Bool
    ) {
        while let first = scalars.first, predicate(first) {
            scalars.removeFirst()
        }
    }
}
