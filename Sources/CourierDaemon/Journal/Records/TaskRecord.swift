package import Courier
import Foundation

/// The journal's record of a background task: its identifier, the ``TransferSpec`` its app's task layer built, and
/// what courierd decided of it at its admission (created in the background, not to start before a time).
///
/// Form 2: `v`, `identifier`, `spec`, `createdInBackground` and `startAfter` when set. Form 1 is the same without `v`,
/// or, from a journal written before the spec was sent whole, the task's parts instead of `spec`
/// (``IPCMessage/BackgroundTask/Parts``).
package struct TaskRecord: JournalRecord {
    package static let form = 2

    package var task: IPCMessage.BackgroundTask

    package init(_ task: IPCMessage.BackgroundTask) {
        self.task = task
    }

    private enum CodingKeys: String, CodingKey {
        case form = "v"
        case identifier, spec, createdInBackground, startAfter
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.form, forKey: .form)
        try container.encode(task.identifier, forKey: .identifier)
        try container.encode(task.spec, forKey: .spec)
        try container.encodeIfPresent(task.createdInBackground, forKey: .createdInBackground)
        try container.encodeIfPresent(task.startAfter, forKey: .startAfter)
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let form = try Self.form(of: container, key: .form)
        let identifier = try container.decode(Int.self, forKey: .identifier)
        if form == 1 && !container.contains(.spec) {
            task = try IPCMessage.BackgroundTask.Parts(from: decoder).task(identifier: identifier)
        } else {
            task = IPCMessage.BackgroundTask(
                identifier: identifier,
                spec: try container.decode(TransferSpec.self, forKey: .spec)
            )
        }
        task.createdInBackground = try container.decodeIfPresent(Bool.self, forKey: .createdInBackground)
        task.startAfter = try container.decodeIfPresent(Date.self, forKey: .startAfter)
    }
}

/// Written and read without `Codable`'s containers (the same bytes): the journal writes one for every task, and reads
/// them all at its start and for every listing.
extension TaskRecord: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("v", Self.form)
            try task.writeEntries(to: buffer)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var form: Int?
        var fields = IPCMessage.BackgroundTask.RecordFields()
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil
            }
            if reader.is(key, "v") { return try reader.read(&form, at: value, codingPath: codingPath) }
            return try fields.read(key, at: value, from: reader, codingPath: codingPath)
        }
        let readForm = try Self.form(form, codingPath: codingPath)
        guard let task = try fields.task(reader: reader, codingPath: codingPath) else {
            guard readForm == 1 else {
                throw reader.missing("spec", codingPath: codingPath)
            }
            // A task journaled as its parts (``IPCMessage/BackgroundTask/Parts``).
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        return (Self(task), end)
    }
}
