package import Foundation

/// The record format: any `Codable` value as compact tagged binary, written and read without Foundation's JSON (which
/// cost courierd a JSON document per event, per task created and per task listed). courierd's journal keeps its
/// records in it, and version 2 of the protocol carries its frames' payloads in it (docs/ipc.md).
///
/// A record is ``RecordFormat/marker`` then one value. A value is a tag byte and its body: nil, false, true; a signed
/// integer (zigzag LEB128), an unsigned one (LEB128), a double or a float (little-endian bits); a string or bytes
/// (LEB128 length, then UTF-8 or the bytes); a keyed container (a 4-byte little-endian count, then each entry: its key
/// as a length and UTF-8, then its value) or an unkeyed one (a 4-byte count, then the values). `Date` is its
/// `timeIntervalSinceReferenceDate` as a double, `URL` its absolute string, `Data` bytes. Keys are written in the
/// order the type encodes them; a reader finds them by name, so fields may be added (read with `decodeIfPresent`)
/// as they may in JSON. Journal records written before this format (JSON) are still read (`Journal.decode(_:from:)`).
package enum RecordFormat {
    /// The first byte of a record in this format: no JSON text begins with it.
    package static let marker: UInt8 = 0x01

    package enum Tag: UInt8 {
        case null = 0
        case `false` = 1
        case `true` = 2
        case signed = 3
        case unsigned = 4
        case double = 5
        case float = 6
        case string = 7
        case bytes = 8
        case keyed = 9
        case unkeyed = 10
    }
}

/// Writes a value in the ``RecordFormat``. Containers are written in place as a type encodes into them, which is
/// how synthesized and hand-written `encode(to:)` methods in Courier work: a container is finished before its parent
/// writes its next entry.
package struct RecordEncoder {
    package static func encode(_ value: some Encodable) throws -> Data {
        try encode(value, direct: true)
    }

    /// `direct`: whether the ``DirectRecord`` types write themselves (false: every value through its `encode(to:)`,
    /// which writes the same bytes more slowly).
    package static func encode(_ value: some Encodable, direct: Bool) throws -> Data {
        let buffer = RecordBuffer()
        buffer.direct = direct
        buffer.bytes.reserveCapacity(256)
        buffer.bytes.append(RecordFormat.marker)
        try buffer.encodeValue(value, codingPath: [])
        return Data(buffer.bytes)
    }
}

/// The bytes being written, shared by every encoder and container of one record.
///
/// `bytes` and `entries` are `@exclusivity(unchecked)`: one record is written by one call on one thread, and no access
/// to them overlaps another (none is held across a call that reaches them), so the runtime's check of each access
/// could find nothing; it took half the time of writing an event (1.9 → 0.9 µs without it).
package final class RecordBuffer {
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Whether a ``DirectRecord`` writes itself (false: through its `encode(to:)`, to compare the two).
    var direct = true
    /// The entries written so far in the innermost keyed container a ``DirectRecord`` has open (``keyed(_:)``).
    @exclusivity(unchecked) var entries: UInt32 = 0

    func tag(_ tag: RecordFormat.Tag) {
        bytes.append(tag.rawValue)
    }

    func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    func signed(_ value: Int64) {
        tag(.signed)
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    func unsigned(_ value: UInt64) {
        tag(.unsigned)
        varint(value)
    }

    func string(_ value: String) {
        tag(.string)
        raw(value)
    }

    /// A length and UTF-8, untagged (a key).
    func raw(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    func double(_ value: Double) {
        tag(.double)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    func float(_ value: Float) {
        tag(.float)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Starts a container: its tag and a count slot; returns the slot's offset.
    func container(_ tag: RecordFormat.Tag) -> Int {
        self.tag(tag)
        let slot = bytes.count
        bytes.append(contentsOf: [0, 0, 0, 0])
        return slot
    }

    func setCount(_ count: UInt32, at slot: Int) {
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: count.littleEndian, toByteOffset: slot, as: UInt32.self) }
    }

    /// Writes `value`: the types with a form of their own directly, any other through its `encode(to:)` (an empty
    /// keyed container when it wrote nothing).
    func encodeValue<Value: Encodable>(_ value: Value, codingPath: [any CodingKey]) throws {
        if direct, let record = value as? any DirectRecord {
            try record.writeRecord(to: self)
            return
        }
        try encodeThroughCodable(value, codingPath: codingPath)
    }

    /// Writes `value` through its `encode(to:)`, or as the form of its own its type has.
    func encodeThroughCodable<Value: Encodable>(_ value: Value, codingPath: [any CodingKey]) throws {
        switch value {
        case let data as Data:
            tag(.bytes)
            varint(UInt64(data.count))
            bytes.append(contentsOf: data)
        case let date as Date:
            double(date.timeIntervalSinceReferenceDate)
        case let url as URL:
            string(url.absoluteString)
        default:
            let start = bytes.count
            try value.encode(to: RecordValueEncoder(buffer: self, codingPath: codingPath))
            if bytes.count == start {
                _ = container(.keyed)
            }
        }
    }
}

/// The `Encoder` handed to a value's `encode(to:)`. Asked for its keyed container again, it hands out the same one.
private final class RecordValueEncoder: Encoder {
    let buffer: RecordBuffer
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private var keyed: RecordCount?

    init(buffer: RecordBuffer, codingPath: [any CodingKey]) {
        self.buffer = buffer
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let count = keyed ?? RecordCount(slot: buffer.container(.keyed))
        keyed = count
        return KeyedEncodingContainer(RecordKeyedEncoder<Key>(buffer: buffer, codingPath: codingPath, count: count))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        RecordUnkeyedEncoder(buffer: buffer, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        RecordSingleValueEncoder(buffer: buffer, codingPath: codingPath)
    }
}

/// Counts the entries of a container and keeps its slot up to date after each.
private final class RecordCount {
    let slot: Int
    var count: UInt32 = 0

    init(slot: Int) {
        self.slot = slot
    }

    func added(in buffer: RecordBuffer) {
        count += 1
        buffer.setCount(count, at: slot)
    }
}

private struct RecordKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let buffer: RecordBuffer
    let codingPath: [any CodingKey]
    private let count: RecordCount

    init(buffer: RecordBuffer, codingPath: [any CodingKey], count: RecordCount? = nil) {
        self.buffer = buffer
        self.codingPath = codingPath
        self.count = count ?? RecordCount(slot: buffer.container(.keyed))
    }

    private func entry(_ key: Key, _ write: () throws -> Void) rethrows {
        buffer.raw(key.stringValue)
        try write()
        count.added(in: buffer)
    }

    mutating func encodeNil(forKey key: Key) throws { entry(key) { buffer.tag(.null) } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { entry(key) { buffer.tag(value ? .true : .false) } }
    mutating func encode(_ value: String, forKey key: Key) throws { entry(key) { buffer.string(value) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { entry(key) { buffer.double(value) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { entry(key) { buffer.float(value) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { entry(key) { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { entry(key) { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { entry(key) { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { entry(key) { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { entry(key) { buffer.signed(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { entry(key) { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { entry(key) { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { entry(key) { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { entry(key) { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { entry(key) { buffer.unsigned(value) } }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        try entry(key) { try buffer.encodeValue(value, codingPath: codingPath + [key]) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        buffer.raw(key.stringValue)
        count.added(in: buffer)
        return KeyedEncodingContainer(RecordKeyedEncoder<NestedKey>(buffer: buffer, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        buffer.raw(key.stringValue)
        count.added(in: buffer)
        return RecordUnkeyedEncoder(buffer: buffer, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(forKey: Key(stringValue: "super")!)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        buffer.raw(key.stringValue)
        count.added(in: buffer)
        return RecordValueEncoder(buffer: buffer, codingPath: codingPath + [key])
    }
}

private struct RecordUnkeyedEncoder: UnkeyedEncodingContainer {
    let buffer: RecordBuffer
    let codingPath: [any CodingKey]
    private let counter: RecordCount

    var count: Int { Int(counter.count) }

    init(buffer: RecordBuffer, codingPath: [any CodingKey]) {
        self.buffer = buffer
        self.codingPath = codingPath
        counter = RecordCount(slot: buffer.container(.unkeyed))
    }

    private func element(_ write: () throws -> Void) rethrows {
        try write()
        counter.added(in: buffer)
    }

    mutating func encodeNil() throws { element { buffer.tag(.null) } }
    mutating func encode(_ value: Bool) throws { element { buffer.tag(value ? .true : .false) } }
    mutating func encode(_ value: String) throws { element { buffer.string(value) } }
    mutating func encode(_ value: Double) throws { element { buffer.double(value) } }
    mutating func encode(_ value: Float) throws { element { buffer.float(value) } }
    mutating func encode(_ value: Int) throws { element { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int8) throws { element { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int16) throws { element { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int32) throws { element { buffer.signed(Int64(value)) } }
    mutating func encode(_ value: Int64) throws { element { buffer.signed(value) } }
    mutating func encode(_ value: UInt) throws { element { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt8) throws { element { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt16) throws { element { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt32) throws { element { buffer.unsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt64) throws { element { buffer.unsigned(value) } }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        try element { try buffer.encodeValue(value, codingPath: codingPath) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        counter.added(in: buffer)
        return KeyedEncodingContainer(RecordKeyedEncoder<NestedKey>(buffer: buffer, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        counter.added(in: buffer)
        return RecordUnkeyedEncoder(buffer: buffer, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder {
        counter.added(in: buffer)
        return RecordValueEncoder(buffer: buffer, codingPath: codingPath)
    }
}

private struct RecordSingleValueEncoder: SingleValueEncodingContainer {
    let buffer: RecordBuffer
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { buffer.tag(.null) }
    mutating func encode(_ value: Bool) throws { buffer.tag(value ? .true : .false) }
    mutating func encode(_ value: String) throws { buffer.string(value) }
    mutating func encode(_ value: Double) throws { buffer.double(value) }
    mutating func encode(_ value: Float) throws { buffer.float(value) }
    mutating func encode(_ value: Int) throws { buffer.signed(Int64(value)) }
    mutating func encode(_ value: Int8) throws { buffer.signed(Int64(value)) }
    mutating func encode(_ value: Int16) throws { buffer.signed(Int64(value)) }
    mutating func encode(_ value: Int32) throws { buffer.signed(Int64(value)) }
    mutating func encode(_ value: Int64) throws { buffer.signed(value) }
    mutating func encode(_ value: UInt) throws { buffer.unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { buffer.unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { buffer.unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { buffer.unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { buffer.unsigned(value) }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        try buffer.encodeValue(value, codingPath: codingPath)
    }
}
