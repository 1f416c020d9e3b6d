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
    /// A keyed container of the entries `body` writes: its count is the number of keys written in it, set once
    /// `body` returns (as the `Codable` containers keep theirs).
    package func keyed(_ body: () throws -> Void) rethrows {
        let slot = container(.keyed)
        let outer = entries
        entries = 0
        defer {
            setCount(entries, at: slot)
            entries = outer
        }
        try body()
    }

    /// Starts an unkeyed container of `count` values.
    package func unkeyed(count: Int) {
        tag(.unkeyed)
        withUnsafeBytes(of: UInt32(count).littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// An entry's key, counted in the innermost open ``keyed(_:)`` container.
    package func key(_ name: StaticString) {
        entries += 1
        varint(UInt64(name.utf8CodeUnitCount))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    package func bool(_ value: Bool) {
        tag(value ? .true : .false)
    }

    /// Writes `value` as ``RecordEncoder`` does: a number, a string, a flag or a date directly, any other value
    /// through ``RecordBuffer/encodeValue(_:codingPath:)``.
    package func value<Value: Encodable>(_ value: Value) throws {
        // By the value's type (each test is decided where the function is specialized), not by casting the value.
        if Value.self == String.self {
            string(value as! String)
        } else if Value.self == Int.self {
            signed(Int64(value as! Int))
        } else if Value.self == Int64.self {
            signed(value as! Int64)
        } else if Value.self == Int32.self {
            signed(Int64(value as! Int32))
        } else if Value.self == UInt64.self {
            unsigned(value as! UInt64)
        } else if Value.self == Bool.self {
            bool(value as! Bool)
        } else if Value.self == Float.self {
            float(value as! Float)
        } else if Value.self == Date.self {
            double((value as! Date).timeIntervalSinceReferenceDate)
        } else {
            try encodeValue(value, codingPath: [])
        }
    }

    /// An entry: its key, then its value.
    package func entry<Value: Encodable>(_ key: StaticString, _ value: Value) throws {
        self.key(key)
        try self.value(value)
    }

    /// An entry whose value writes itself.
    package func entry(_ key: StaticString, _ value: some DirectRecord) throws {
        self.key(key)
        try value.writeRecord(to: self)
    }

    /// An entry when `value` is not nil (as `encodeIfPresent` writes it).
    package func entry<Value: Encodable>(_ key: StaticString, ifPresent value: Value?) throws {
        if let value {
            try entry(key, value)
        }
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
    private func readInteger<Value: FixedWidthInteger>(
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

    private func readString(at offset: Int, codingPath: [any CodingKey]) throws -> (String, Int) {
        guard try tag(at: offset, codingPath: codingPath) == .string else {
            throw DecodingError.typeMismatch(
                String.self,
                .init(codingPath: codingPath, debugDescription: "record: another type at byte \(offset)")
            )
        }
        let range = try span(at: offset + 1, codingPath: codingPath)
        return (text(range), range.upperBound)
    }

    /// Reads the value at `offset`, which reads itself, into `value`; returns the offset after it.
    package func read<Value: DirectRecord>(
        _ value: inout Value?,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> Int {
        let (read, end) = try Value.readRecord(from: self, at: offset, codingPath: codingPath)
        value = read
        return end
    }

    /// Reads the value at `offset` into `value`; returns the offset after it.
    package func read<Value: Decodable>(
        _ value: inout Value,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> Int {
        let (read, end) = try readValue(Value.self, at: offset, codingPath: codingPath)
        value = read
        return end
    }

    /// Reads the value at `offset` into `value`; returns the offset after it.
    package func read<Value: Decodable>(
        _ value: inout Value?,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> Int {
        let (read, end) = try readValue(Value.self, at: offset, codingPath: codingPath)
        value = read
        return end
    }

    /// The value at `offset`, as ``RecordDecoder`` reads it (a number, a string, a flag or a date directly), and the
    /// offset after it.
    package func readValue<Value: Decodable>(
        _ type: Value.Type,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (Value, Int) {
        if type == String.self {
            let (text, end) = try readString(at: offset, codingPath: codingPath)
            return (text as! Value, end)
        }
        func integer<Number: FixedWidthInteger>(_ number: Number.Type) throws -> (Value, Int) {
            let (read, end) = try readInteger(number, at: offset, codingPath: codingPath)
            return (read as! Value, end)
        }
        if type == Int.self {
            return try integer(Int.self)
        }
        if type == Int64.self {
            return try integer(Int64.self)
        }
        if type == Int32.self {
            return try integer(Int32.self)
        }
        if type == UInt64.self {
            return try integer(UInt64.self)
        }
        if type == Bool.self {
            return (try bool(at: offset, codingPath: codingPath) as! Value, offset + 1)
        }
        if type == Float.self {
            return (try float(at: offset, codingPath: codingPath) as! Value, offset + 5)
        }
        if type == Date.self {
            let seconds = try double(at: offset, codingPath: codingPath)
            return (Date(timeIntervalSinceReferenceDate: seconds) as! Value, offset + 9)
        }
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
