import Foundation

/// A value as the journal keeps it, in a type of the journal's own rather than the wire's: a message of the protocol
/// can change without changing what a journal holds, and every record says which form of it it is.
///
/// A record is written in the ``RecordFormat`` with the number of its form under the key `v`. A record without one is
/// form 1: the wire type's own encoding, which the journal kept before its records had types of their own (in JSON in
/// a journal written before the record format). A form newer than this courierd's is refused as unreadable, not
/// guessed at. Each record type reads its earlier forms beside its own (`…+EarlierForms.swift`).
package protocol JournalRecord: Codable, Sendable {
    /// The form this courierd writes.
    static var form: Int { get }
}

extension JournalRecord {
    /// The form of the record `container` reads (1 when it says none).
    static func form<Key: CodingKey>(of container: KeyedDecodingContainer<Key>, key: Key) throws -> Int {
        try form(try container.decodeIfPresent(Int.self, forKey: key), codingPath: container.codingPath + [key])
    }

    /// The form a record says, `read` (1 when it says none); a form newer than this courierd's is refused.
    static func form(_ read: Int?, codingPath: [any CodingKey]) throws -> Int {
        let form = read ?? 1
        guard (1...Self.form).contains(form) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath,
                    debugDescription: "\(Self.self) in form \(form); this courierd reads forms 1 to \(Self.form)"
                )
            )
        }
        return form
    }
}
