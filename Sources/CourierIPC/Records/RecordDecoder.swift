package import Foundation

/// Reads a value written by ``RecordEncoder``. Every read is bounds-checked: a damaged record is a `DecodingError`,
/// never a crash.
package struct RecordDecoder {
    package static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        try decode(type, from: data, direct: true)
    }

    /// `direct`: whether the ``DirectRecord`` types read themselves (false: every value through its `init(from:)`,
    /// which reads the same values more slowly).
    package static func decode<Value: Decodable>(_ type: Value.Type, from data: Data, direct: Bool) throws -> Value {
        try data.withUnsafeBytes { bytes in
            let reader = RecordReader(bytes: bytes, direct: direct)
            guard bytes.first == RecordFormat.marker else {
                throw reader.damaged("not a record", at: 0, codingPath: [])
            }
            return try reader.decodeValue(type, at: 1, codingPath: [])
        }
    }
}

/// The bytes of one record, read by every decoder and container of it without reference counting. It borrows them
/// for the one call of ``RecordDecoder/decode(_:from:)`` that reads the record: what it decodes (strings, data) is
/// copied out, so nothing keeps a reference into them afterwards.
package struct RecordReader {
    let bytes: UnsafeRawBufferPointer
    /// Whether a ``DirectRecord`` reads itself (false: through its `init(from:)`, to compare the two).
    var direct = true

    /// The UTF-8 at `range` as a string.
    func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// Whether the bytes at `range` are `utf8`.
    func matches(_ range: Range<Int>, _ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        range.count == utf8.count
            && (utf8.isEmpty || memcmp(bytes.baseAddress! + range.lowerBound, utf8.baseAddress!, utf8.count) == 0)
    }

    func damaged(_ what: String, at offset: Int, codingPath: [any CodingKey]) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: "record: \(what) at byte \(offset)"))
    }

    func tag(at offset: Int, codingPath: [any CodingKey]) throws -> RecordFormat.Tag {
        guard offset < bytes.count, let tag = RecordFormat.Tag(rawValue: bytes[offset]) else {
            throw damaged("no value", at: offset, codingPath: codingPath)
        }
        return tag
    }

    /// A LEB128 number at `offset` and the offset after it.
    func varint(at offset: Int, codingPath: [any CodingKey]) throws -> (UInt64, Int) {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var position = offset
        while true {
            guard position < bytes.count, shift < 64 else {
                throw damaged("a number cut short", at: offset, codingPath: codingPath)
            }
            let byte = bytes[position]
            position += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 {
                return (value, position)
            }
            shift += 7
        }
    }

    /// A length at `offset`, then that many bytes: their range.
    func span(at offset: Int, codingPath: [any CodingKey]) throws -> Range<Int> {
        let (length, start) = try varint(at: offset, codingPath: codingPath)
        guard length <= UInt64(bytes.count - start) else {
            throw damaged("a length past the end", at: offset, codingPath: codingPath)
        }
        return start..<(start + Int(length))
    }

    func count(at offset: Int, codingPath: [any CodingKey]) throws -> Int {
        guard offset + 4 <= bytes.count else {
            throw damaged("a container cut short", at: offset, codingPath: codingPath)
        }
        return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
            | Int(bytes[offset + 3]) << 24
    }

    /// How deep containers may nest: Courier's records nest a few levels; a damaged count must not recurse without
    /// end.
    static let maximumDepth = 64

    /// The offset just after the value at `offset`.
    func end(of offset: Int, codingPath: [any CodingKey], depth: Int = 0) throws -> Int {
        guard depth < Self.maximumDepth else {
            throw damaged("containers nested too deep", at: offset, codingPath: codingPath)
        }
        switch try tag(at: offset, codingPath: codingPath) {
        case .null, .false, .true:
            return offset + 1
        case .signed, .unsigned:
            return try varint(at: offset + 1, codingPath: codingPath).1
        case .double:
            return try fixed(8, at: offset, codingPath: codingPath)
        case .float:
            return try fixed(4, at: offset, codingPath: codingPath)
        case .string, .bytes:
            return try span(at: offset + 1, codingPath: codingPath).upperBound
        case .keyed:
            var position = offset + 5
            for _ in 0..<(try count(at: offset + 1, codingPath: codingPath)) {
                position = try span(at: position, codingPath: codingPath).upperBound
                position = try end(of: position, codingPath: codingPath, depth: depth + 1)
            }
            return position
        case .unkeyed:
            var position = offset + 5
            for _ in 0..<(try count(at: offset + 1, codingPath: codingPath)) {
                position = try end(of: position, codingPath: codingPath, depth: depth + 1)
            }
            return position
        }
    }

    private func fixed(_ size: Int, at offset: Int, codingPath: [any CodingKey]) throws -> Int {
        guard offset + 1 + size <= bytes.count else {
            throw damaged("a number cut short", at: offset, codingPath: codingPath)
        }
        return offset + 1 + size
    }

    private func littleEndian(_ size: Int, at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<size {
            value |= UInt64(bytes[offset + 1 + index]) << (8 * UInt64(index))
        }
        return value
    }

    // MARK: Values

    package func isNull(at offset: Int, codingPath: [any CodingKey]) throws -> Bool {
        try tag(at: offset, codingPath: codingPath) == .null
    }

    func bool(at offset: Int, codingPath: [any CodingKey]) throws -> Bool {
        switch try tag(at: offset, codingPath: codingPath) {
        case .true: return true
        case .false: return false
        default: throw mismatch(Bool.self, at: offset, codingPath: codingPath)
        }
    }

    func signed(at offset: Int, codingPath: [any CodingKey]) throws -> Int64 {
        guard try tag(at: offset, codingPath: codingPath) == .signed else {
            throw mismatch(Int64.self, at: offset, codingPath: codingPath)
        }
        let zigzag = try varint(at: offset + 1, codingPath: codingPath).0
        return Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
    }

    func unsigned(at offset: Int, codingPath: [any CodingKey]) throws -> UInt64 {
        guard try tag(at: offset, codingPath: codingPath) == .unsigned else {
            throw mismatch(UInt64.self, at: offset, codingPath: codingPath)
        }
        return try varint(at: offset + 1, codingPath: codingPath).0
    }

    func integer<Value: FixedWidthInteger>(_ type: Value.Type, at offset: Int, codingPath: [any CodingKey]) throws
        -> Value
    {
        let converted: Value? =
            Value.isSigned
            ? Value(exactly: try signed(at: offset, codingPath: codingPath))
            : Value(exactly: try unsigned(at: offset, codingPath: codingPath))
        guard let converted else {
            throw damaged("\(Value.self) out of range", at: offset, codingPath: codingPath)
        }
        return converted
    }

    func double(at offset: Int, codingPath: [any CodingKey]) throws -> Double {
        guard try tag(at: offset, codingPath: codingPath) == .double else {
            throw mismatch(Double.self, at: offset, codingPath: codingPath)
        }
        _ = try fixed(8, at: offset, codingPath: codingPath)
        return Double(bitPattern: littleEndian(8, at: offset))
    }

    func float(at offset: Int, codingPath: [any CodingKey]) throws -> Float {
        guard try tag(at: offset, codingPath: codingPath) == .float else {
            throw mismatch(Float.self, at: offset, codingPath: codingPath)
        }
        _ = try fixed(4, at: offset, codingPath: codingPath)
        return Float(bitPattern: UInt32(littleEndian(4, at: offset)))
    }

    func string(at offset: Int, codingPath: [any CodingKey]) throws -> String {
        guard try tag(at: offset, codingPath: codingPath) == .string else {
            throw mismatch(String.self, at: offset, codingPath: codingPath)
        }
        return text(try span(at: offset + 1, codingPath: codingPath))
    }

    func decodeValue<Value: Decodable>(_ type: Value.Type, at offset: Int, codingPath: [any CodingKey]) throws
        -> Value
    {
        if direct, let record = type as? any DirectRecord.Type {
            return try record.readRecord(from: self, at: offset, codingPath: codingPath).value as! Value
        }
        return try decodeThroughCodable(type, at: offset, codingPath: codingPath)
    }

    /// Reads the value at `offset` through its type's `init(from:)`, or as the form of its own the type has.
    func decodeThroughCodable<Value: Decodable>(_ type: Value.Type, at offset: Int, codingPath: [any CodingKey])
        throws -> Value
    {
        if type == Data.self {
            guard try tag(at: offset, codingPath: codingPath) == .bytes else {
                throw mismatch(Data.self, at: offset, codingPath: codingPath)
            }
            let range = try span(at: offset + 1, codingPath: codingPath)
            return Data(UnsafeRawBufferPointer(rebasing: bytes[range])) as! Value
        }
        if type == Date.self {
            return Date(timeIntervalSinceReferenceDate: try double(at: offset, codingPath: codingPath)) as! Value
        }
        if type == URL.self {
            guard let url = URL(string: try string(at: offset, codingPath: codingPath)) else {
                throw damaged("not a URL", at: offset, codingPath: codingPath)
            }
            return url as! Value
        }
        return try Value(from: RecordValueDecoder(reader: self, offset: offset, codingPath: codingPath))
    }

    private func mismatch(_ type: Any.Type, at offset: Int, codingPath: [any CodingKey]) -> DecodingError {
        .typeMismatch(
            type,
            .init(codingPath: codingPath, debugDescription: "record: another type at byte \(offset)")
        )
    }
}

/// The `Decoder` handed to a value's `init(from:)`.
private struct RecordValueDecoder: Decoder {
    let reader: RecordReader
    let offset: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try RecordKeyedDecoder<Key>(reader: reader, offset: offset, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try RecordUnkeyedDecoder(reader: reader, offset: offset, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        RecordSingleValueDecoder(reader: reader, offset: offset, codingPath: codingPath)
    }
}

private struct RecordKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: RecordReader
    let codingPath: [any CodingKey]
    /// Each entry's key (the range of its UTF-8) and the offset of its value.
    private let entries: [(key: Range<Int>, value: Int)]

    init(reader: RecordReader, offset: Int, codingPath: [any CodingKey]) throws {
        guard try reader.tag(at: offset, codingPath: codingPath) == .keyed else {
            throw DecodingError.typeMismatch(
                [String: Any].self,
                .init(codingPath: codingPath, debugDescription: "record: no keyed container at byte \(offset)")
            )
        }
        self.reader = reader
        self.codingPath = codingPath
        var entries: [(key: Range<Int>, value: Int)] = []
        var position = offset + 5
        let count = try reader.count(at: offset + 1, codingPath: codingPath)
        entries.reserveCapacity(min(count, 64))
        for _ in 0..<count {
            let key = try reader.span(at: position, codingPath: codingPath)
            entries.append((key, key.upperBound))
            position = try reader.end(of: key.upperBound, codingPath: codingPath)
        }
        self.entries = entries
    }

    var allKeys: [Key] {
        entries.compactMap { Key(stringValue: reader.text($0.key)) }
    }

    private func find(_ key: Key) -> Int? {
        var name = key.stringValue
        return name.withUTF8 { utf8 in
            entries.first { reader.matches($0.key, utf8) }?.value
        }
    }

    private func value(_ key: Key) throws -> Int {
        guard let offset = find(key) else {
            throw DecodingError.keyNotFound(
                key,
                .init(codingPath: codingPath, debugDescription: "record: no \"\(key.stringValue)\"")
            )
        }
        return offset
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    // Primitives say their container's path in an error (no array is made for each field read).

    func decodeNil(forKey key: Key) throws -> Bool {
        try reader.isNull(at: try value(key), codingPath: codingPath)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try reader.bool(at: try value(key), codingPath: codingPath)
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try reader.string(at: try value(key), codingPath: codingPath)
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try reader.double(at: try value(key), codingPath: codingPath)
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try reader.float(at: try value(key), codingPath: codingPath)
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    private func integer<Value: FixedWidthInteger>(_ type: Value.Type, _ key: Key) throws -> Value {
        try reader.integer(type, at: try value(key), codingPath: codingPath)
    }

    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try reader.decodeValue(type, at: try value(key), codingPath: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(
            try RecordKeyedDecoder<NestedKey>(reader: reader, offset: try value(key), codingPath: codingPath + [key])
        )
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try RecordUnkeyedDecoder(reader: reader, offset: try value(key), codingPath: codingPath + [key])
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(forKey: Key(stringValue: "super")!)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        RecordValueDecoder(reader: reader, offset: try value(key), codingPath: codingPath + [key])
    }
}

private struct RecordUnkeyedDecoder: UnkeyedDecodingContainer {
    let reader: RecordReader
    let codingPath: [any CodingKey]
    let count: Int?
    private(set) var currentIndex = 0
    private var position: Int

    init(reader: RecordReader, offset: Int, codingPath: [any CodingKey]) throws {
        guard try reader.tag(at: offset, codingPath: codingPath) == .unkeyed else {
            throw DecodingError.typeMismatch(
                [Any].self,
                .init(
                    codingPath: codingPath,
                    debugDescription: "record: no unkeyed container at byte \(offset)"
                )
            )
        }
        self.reader = reader
        self.codingPath = codingPath
        count = try reader.count(at: offset + 1, codingPath: codingPath)
        position = offset + 5
    }

    var isAtEnd: Bool { currentIndex >= (count ?? 0) }

    /// The offset of the next element, and moves past it.
    private mutating func next() throws -> Int {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any.self,
                .init(codingPath: codingPath, debugDescription: "record: past the last element")
            )
        }
        let offset = position
        position = try reader.end(of: offset, codingPath: codingPath)
        currentIndex += 1
        return offset
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, try reader.isNull(at: position, codingPath: codingPath) else {
            return false
        }
        _ = try next()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try reader.bool(at: try next(), codingPath: codingPath) }
    mutating func decode(_ type: String.Type) throws -> String {
        try reader.string(at: try next(), codingPath: codingPath)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        try reader.double(at: try next(), codingPath: codingPath)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        try reader.float(at: try next(), codingPath: codingPath)
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    private mutating func integer<Value: FixedWidthInteger>(_ type: Value.Type) throws -> Value {
        try reader.integer(type, at: try next(), codingPath: codingPath)
    }

    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        if reader.direct, !isAtEnd, let record = type as? any DirectRecord.Type {
            // Read where it ends: not walked once to find its end and again to read it.
            let (value, end) = try record.readRecord(from: reader, at: position, codingPath: codingPath)
            position = end
            currentIndex += 1
            return value as! Value
        }
        return try reader.decodeValue(type, at: try next(), codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        KeyedDecodingContainer(
            try RecordKeyedDecoder<NestedKey>(reader: reader, offset: try next(), codingPath: codingPath)
        )
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try RecordUnkeyedDecoder(reader: reader, offset: try next(), codingPath: codingPath)
    }

    mutating func superDecoder() throws -> any Decoder {
        RecordValueDecoder(reader: reader, offset: try next(), codingPath: codingPath)
    }
}

private struct RecordSingleValueDecoder: SingleValueDecodingContainer {
    let reader: RecordReader
    let offset: Int
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { (try? reader.isNull(at: offset, codingPath: codingPath)) ?? false }
    func decode(_ type: Bool.Type) throws -> Bool { try reader.bool(at: offset, codingPath: codingPath) }
    func decode(_ type: String.Type) throws -> String { try reader.string(at: offset, codingPath: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try reader.double(at: offset, codingPath: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try reader.float(at: offset, codingPath: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try reader.integer(type, at: offset, codingPath: codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try reader.integer(type, at: offset, codingPath: codingPath) }

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try reader.decodeValue(type, at: offset, codingPath: codingPath)
    }
}
