package import Courier
import Foundation

/// The journal's record of an event waiting for its app (and of a task's completion in the history): the seam's
/// event, its counters and its payload.
///
/// Form 2: `v`, `progress` and `payload`. Form 1 is the same without `v`, or one of the events journaled before events
/// were the seam's own (``EarlierEvent``).
package struct EventRecord: JournalRecord {
    package static let form = 2

    package var event: IPCMessage.BackgroundEvent

    package init(_ event: IPCMessage.BackgroundEvent) {
        self.event = event
    }

    private enum CodingKeys: String, CodingKey {
        case form = "v"
        case progress, payload
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.form, forKey: .form)
        try container.encode(event.progress, forKey: .progress)
        try container.encode(event.payload, forKey: .payload)
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let form = try Self.form(of: container, key: .form)
        if form == 1 && !container.contains(.payload) {
            event = try EarlierEvent(from: decoder).event
            return
        }
        event = IPCMessage.BackgroundEvent(
            try container.decode(TransferEvent.Payload.self, forKey: .payload),
            progress: try container.decode(TransferProgress.self, forKey: .progress)
        )
    }
}

/// Written and read without `Codable`'s containers (the same bytes): the journal writes one for every event.
extension EventRecord: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("v", Self.form)
            try event.writeEntries(to: buffer)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var form: Int?
        var fields = IPCMessage.BackgroundEvent.RecordFields()
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if reader.is(key, "v") { return try reader.read(&form, at: value, codingPath: codingPath) }
            return try fields.read(key, at: value, from: reader, codingPath: codingPath)
        }
        let readForm = try Self.form(form, codingPath: codingPath)
        guard let event = try fields.event(reader: reader, codingPath: codingPath) else {
            guard readForm == 1 else {
                throw reader.missing("payload", codingPath: codingPath)
            }
            // An event journaled before events were the seam's own (``EarlierEvent``).
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        return (Self(event), end)
    }
}
