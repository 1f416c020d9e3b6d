import Foundation

/// A type that writes and reads its ``RecordFormat`` form itself: the bytes its `Codable` conformance writes through
/// ``RecordEncoder``, without a container, a box and a generic lookup per nested value, and read back in one pass
/// (the containers of `RecordDecoder` walk each nested value once per level to find the next key). For the values
/// every task's events carry, which courierd journals and sends and the app reads: ``RecordEncoder`` and
/// ``RecordDecoder`` use these methods wherever such a value occurs, and `RecordFormatTests` checks each type's bytes
/// against its `Codable` conformance's.
package protocol DirectRecord: Codable {
    /// Writes the value as its `encode(to:)` would.
    func writeRecord(to buffer: RecordBuffer) throws
    /// Reads the value at `offset` as its `init(from:)` would, and says where it ends. Errors say `codingPath`, the
    /// path of the container holding the value.
    static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int)
}

extension RecordBuffer {
    /// Starts a keyed container of `count` entries.
    package func keyed(count: Int) {
        tag(.keyed)
        withUnsafeBytes(of: UInt32(count).littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Starts an unkeyed container of `count` values.
    package func unkeyed(count: Int) {
        tag(.unkeyed)
        withUnsafeBytes(of: UInt32(count).littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// An entry's key.
    package func key(_ name: StaticString) {
        varint(UInt64(name.utf8CodeUnitCount))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    package func bool(_ value: Bool) {
        tag(value ? .true : .false)
    }

    /// Any other value, as ``RecordEncoder`` writes it.
    package func value(_ value: some Encodable) throws {
        try encodeValue(value, codingPath: [])
    }

    /// `value` through its `encode(to:)`: for a ``DirectRecord`` writing a form it does not write itself.
    package func throughCodable(_ value: some Encodable) throws {
        try encodeThroughCodable(value, codingPath: [])
    }
}

extension RecordReader {
    /// Reads the keyed container at `offset` in one pass: `entry` is given each key's UTF-8 and the offset of its
    /// value, and returns the offset after the value it read, or nil to have it skipped. Returns the offset after the
    /// container.
    package func readKeyed(
        at offset: Int,
        codingPath: [any CodingKey],
        _ entry: (_ key: UnsafeRawBufferPointer, _ value: Int) throws -> Int?
    ) throws -> Int {
        guard try tag(at: offset, codingPath: codingPath) == .keyed else {
            throw DecodingError.typeMismatch(
                [String: Any].self,
                .init(codingPath: codingPath, debugDescription: "record: no keyed container at byte \(offset)")
            )
        }
        var position = offset + 5
        for _ in 0..<(try count(at: offset + 1, codingPath: codingPath)) {
            let key = try span(at: position, codingPath: codingPath)
            let name = UnsafeRawBufferPointer(rebasing: bytes[key])
            position = try entry(name, key.upperBound) ?? end(of: key.upperBound, codingPath: codingPath)
        }
        return position
    }

    /// Reads the unkeyed container at `offset`: `element` is given the offset of each value and returns the offset
    /// after it. Returns the number of values and the offset after the container.
    package func readUnkeyed(
        at offset: Int,
        codingPath: [any CodingKey],
        _ element: (_ value: Int) throws -> Int
    ) throws -> (count: Int, end: Int) {
        guard try tag(at: offset, codingPath: codingPath) == .unkeyed else {
            throw DecodingError.typeMismatch(
                [Any].self,
                .init(codingPath: codingPath, debugDescription: "record: no unkeyed container at byte \(offset)")
            )
        }
        let count = try count(at: offset + 1, codingPath: codingPath)
        var position = offset + 5
        for _ in 0..<count {
            position = try element(position)
        }
        return (count, position)
    }

    /// Whether `key` is `name`.
    package func `is`(_ key: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        key.count == name.utf8CodeUnitCount && (key.isEmpty || memcmp(key.baseAddress!, name.utf8Start, key.count) == 0)
    }

    /// The error of a keyed container that lacks `name`.
    package func missing(_ name: StaticString, codingPath: [any CodingKey]) -> DecodingError {
        let key = RecordKey(stringValue: "\(name)")
        return .keyNotFound(key, .init(codingPath: codingPath, debugDescription: "record: no \"\(name)\""))
    }

    /// The integer at `offset` and the offset after it.
    package func readInteger<Value: FixedWidthInteger>(
        _ type: Value.Type,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (Value, Int) {
        let tag = try tag(at: offset, codingPath: codingPath)
        let (bits, end) = try varint(at: offset + 1, codingPath: codingPath)
        let value: Value?
        switch tag {
        case .signed where Value.isSigned:
            value = Value(exactly: Int64(bitPattern: (bits >> 1) ^ (0 &- (bits & 1))))
        case .unsigned where !Value.isSigned:
            value = Value(exactly: bits)
        default:
            throw DecodingError.typeMismatch(
                Value.self,
                .init(codingPath: codingPath, debugDescription: "record: another type at byte \(offset)")
            )
        }
        guard let value else {
            throw damaged("\(Value.self) out of range", at: offset, codingPath: codingPath)
        }
        return (value, end)
    }

    package func readString(at offset: Int, codingPath: [any CodingKey]) throws -> (String, Int) {
        guard try tag(at: offset, codingPath: codingPath) == .string else {
            throw DecodingError.typeMismatch(
                String.self,
                .init(codingPath: codingPath, debugDescription: "record: another type at byte \(offset)")
            )
        }
        let range = try span(at: offset + 1, codingPath: codingPath)
        return (text(range), range.upperBound)
    }

    package func readBool(at offset: Int, codingPath: [any CodingKey]) throws -> (Bool, Int) {
        (try bool(at: offset, codingPath: codingPath), offset + 1)
    }

    /// Any other value, as ``RecordDecoder`` reads it, and the offset after it.
    package func readValue<Value: Decodable>(
        _ type: Value.Type,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (Value, Int) {
        if direct, let record = type as? any DirectRecord.Type {
            let (value, end) = try record.readRecord(from: self, at: offset, codingPath: codingPath)
            return (value as! Value, end)
        }
        return (
            try decodeThroughCodable(type, at: offset, codingPath: codingPath),
            try end(of: offset, codingPath: codingPath)
        )
    }

    /// `type` through its `init(from:)`, and the offset after it: for a ``DirectRecord`` reading a form it does not
    /// read itself.
    package func readThroughCodable<Value: Decodable>(
        _ type: Value.Type,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (Value, Int) {
        (
            try decodeThroughCodable(type, at: offset, codingPath: codingPath),
            try end(of: offset, codingPath: codingPath)
        )
    }
}

/// A key named in an error.
struct RecordKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        nil
    }
}
