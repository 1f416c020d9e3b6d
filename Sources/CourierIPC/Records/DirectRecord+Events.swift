import Foundation

// The values of a task's events, written and read directly (``DirectRecord``): the keys and forms of their
// synthesized `Codable` conformances, in the same order; an optional that is nil is left out, as
// `encodeIfPresent` leaves it. A form these methods do not write themselves (a rare payload, an error, a digest)
// goes through its `Codable` conformance.

extension IPCMessage.Events: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("session", session)
            buffer.key("events")
            buffer.unkeyed(count: events.count)
            for event in events {
                try event.writeRecord(to: buffer)
            }
            try buffer.entry("finished", finished)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var session: String?
        var events: [IPCMessage.SequencedEvent]?
        var finished: Bool?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if reader.is(key, "session") { return try reader.read(&session, at: value, codingPath: codingPath) }
            if reader.is(key, "finished") { return try reader.read(&finished, at: value, codingPath: codingPath) }
            guard reader.is(key, "events") else {
                return nil
            }
            var read: [IPCMessage.SequencedEvent] = []
            let (_, end) = try reader.readUnkeyed(at: value, codingPath: codingPath) { element in
                var event: IPCMessage.SequencedEvent?
                let end = try reader.read(&event, at: element, codingPath: codingPath)
                read.append(event!)
                return end
            }
            events = read
            return end
        }
        guard let session else { throw reader.missing("session", codingPath: codingPath) }
        guard let events else { throw reader.missing("events", codingPath: codingPath) }
        guard let finished else { throw reader.missing("finished", codingPath: codingPath) }
        return (Self(session: session, events: events, finished: finished), end)
    }
}

extension IPCMessage.SequencedEvent: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("sequence", sequence)
            try buffer.entry("task", task)
            try buffer.entry("event", event)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var sequence: UInt64?
        var task: Int?
        var event: IPCMessage.BackgroundEvent?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if reader.is(key, "sequence") { return try reader.read(&sequence, at: value, codingPath: codingPath) }
            if reader.is(key, "task") { return try reader.read(&task, at: value, codingPath: codingPath) }
            if reader.is(key, "event") { return try reader.read(&event, at: value, codingPath: codingPath) }
            return nil
        }
        guard let sequence else { throw reader.missing("sequence", codingPath: codingPath) }
        guard let task else { throw reader.missing("task", codingPath: codingPath) }
        guard let event else { throw reader.missing("event", codingPath: codingPath) }
        return (Self(sequence: sequence, task: task, event: event), end)
    }
}

extension IPCMessage.BackgroundEvent: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try writeEntries(to: buffer)
        }
    }

    /// Its entries, for a record that holds them beside keys of its own (the journal's `EventRecord`).
    package func writeEntries(to buffer: RecordBuffer) throws {
        try buffer.entry("progress", progress)
        try buffer.entry("payload", payload)
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var fields = RecordFields()
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            try fields.read(key, at: value, from: reader, codingPath: codingPath)
        }
        guard let event = try fields.event(reader: reader, codingPath: codingPath) else {
            throw reader.missing("payload", codingPath: codingPath)
        }
        return (event, end)
    }

    /// An event's fields as its keyed container is read, in one pass: a record that holds them beside keys of its own
    /// (the journal's `EventRecord`) reads those keys itself.
    package struct RecordFields {
        var progress: TransferProgress?
        var payload: TransferEvent.Payload?

        package init() {}

        /// Reads the entry `key` at `value` when it is one of an event's, and says where it ends; nil otherwise.
        package mutating func read(
            _ key: UnsafeRawBufferPointer,
            at value: Int,
            from reader: RecordReader,
            codingPath: [any CodingKey]
        ) throws -> Int? {
            if reader.is(key, "progress") { return try reader.read(&progress, at: value, codingPath: codingPath) }
            if reader.is(key, "payload") { return try reader.read(&payload, at: value, codingPath: codingPath) }
            return nil
        }

        /// The event; nil when the container had no payload (an earlier form, for the caller to read otherwise).
        package func event(reader: RecordReader, codingPath: [any CodingKey]) throws -> IPCMessage.BackgroundEvent? {
            guard let payload else {
                return nil
            }
            guard let progress else { throw reader.missing("progress", codingPath: codingPath) }
            return IPCMessage.BackgroundEvent(payload, progress: progress)
        }
    }
}

extension TransferProgress: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("received", received)
            try buffer.entry("expectedToReceive", expectedToReceive)
            try buffer.entry("sent", sent)
            try buffer.entry("expectedToSend", expectedToSend)
            try buffer.entry("bytesOnDisk", ifPresent: bytesOnDisk)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var received: Int64?
        var expectedToReceive: Int64?
        var sent: Int64?
        var expectedToSend: Int64?
        var bytesOnDisk: Int64?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil  // An optional left empty; a required one stays missing.
            }
            if reader.is(key, "received") { return try reader.read(&received, at: value, codingPath: codingPath) }
            if reader.is(key, "expectedToReceive") {
                return try reader.read(&expectedToReceive, at: value, codingPath: codingPath)
            }
            if reader.is(key, "sent") { return try reader.read(&sent, at: value, codingPath: codingPath) }
            if reader.is(key, "expectedToSend") {
                return try reader.read(&expectedToSend, at: value, codingPath: codingPath)
            }
            if reader.is(key, "bytesOnDisk") { return try reader.read(&bytesOnDisk, at: value, codingPath: codingPath) }
            return nil
        }
        guard let received else { throw reader.missing("received", codingPath: codingPath) }
        guard let expectedToReceive else { throw reader.missing("expectedToReceive", codingPath: codingPath) }
        guard let sent else { throw reader.missing("sent", codingPath: codingPath) }
        guard let expectedToSend else { throw reader.missing("expectedToSend", codingPath: codingPath) }
        var progress = Self(
            received: received,
            expectedToReceive: expectedToReceive,
            sent: sent,
            expectedToSend: expectedToSend
        )
        progress.bytesOnDisk = bytesOnDisk
        return (progress, end)
    }
}

extension TransferEvent.Payload: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        // A case is a keyed container of one entry, the case's name, whose value holds its associated values.
        func `case`(_ name: StaticString, _ values: () throws -> Void) throws {
            try buffer.keyed {
                buffer.key(name)
                try buffer.keyed(values)
            }
        }
        switch self {
        case .response(let held, let resumeOffset, let head):
            try `case`("response") {
                try buffer.entry("held", held)
                try buffer.entry("resumeOffset", resumeOffset)
                try buffer.entry("head", head)
            }
        case .progress:
            try `case`("progress") {}
        case .complete(let completion):
            try `case`("complete") { try buffer.entry("_0", completion) }
        case .relocated(let url):
            try `case`("relocated") { try buffer.entry("url", url) }
        case .downloaded(let path):
            try `case`("downloaded") { try buffer.entry("path", path) }
        case .resumed(let offset, let expectedTotal):
            try `case`("resumed") {
                try buffer.entry("offset", offset)
                try buffer.entry("expectedTotal", expectedTotal)
            }
        case .data, .informational, .segments, .delayedStart:
            try buffer.throughCodable(self)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        // One case and its values; anything else (another case, a container with more than one key) as the
        // synthesized conformance reads it, errors included.
        guard try reader.tag(at: offset, codingPath: codingPath) == .keyed,
            try reader.count(at: offset + 1, codingPath: codingPath) == 1
        else {
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        var payload: Self?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            // The associated values by label, read as their types say.
            var held: Bool?
            var number: Int64?
            var total: Int64?
            var text: String?
            var head: ResponseHead?
            var completion: TransferCompletion?
            func values(_ read: (UnsafeRawBufferPointer, Int) throws -> Int?) throws -> Int {
                try reader.readKeyed(at: value, codingPath: codingPath, read)
            }
            let end: Int
            if reader.is(key, "response") {
                end = try values { key, value in
                    if reader.is(key, "held") { return try reader.read(&held, at: value, codingPath: codingPath) }
                    if reader.is(key, "resumeOffset") {
                        return try reader.read(&number, at: value, codingPath: codingPath)
                    }
                    if reader.is(key, "head") { return try reader.read(&head, at: value, codingPath: codingPath) }
                    return nil
                }
                guard let held else { throw reader.missing("held", codingPath: codingPath) }
                guard let number else { throw reader.missing("resumeOffset", codingPath: codingPath) }
                guard let head else { throw reader.missing("head", codingPath: codingPath) }
                payload = .response(held: held, resumeOffset: number, head: head)
            } else if reader.is(key, "progress") {
                end = try values { _, _ in nil }
                payload = .progress
            } else if reader.is(key, "complete") {
                end = try values { key, value in
                    reader.is(key, "_0") ? try reader.read(&completion, at: value, codingPath: codingPath) : nil
                }
                guard let completion else { throw reader.missing("_0", codingPath: codingPath) }
                payload = .complete(completion)
            } else if reader.is(key, "relocated") || reader.is(key, "downloaded") {
                let relocated = reader.is(key, "relocated")
                end = try values { key, value in
                    reader.is(key, relocated ? "url" : "path")
                        ? try reader.read(&text, at: value, codingPath: codingPath) : nil
                }
                guard let text else { throw reader.missing(relocated ? "url" : "path", codingPath: codingPath) }
                payload = relocated ? .relocated(url: text) : .downloaded(path: text)
            } else if reader.is(key, "resumed") {
                end = try values { key, value in
                    if reader.is(key, "offset") { return try reader.read(&number, at: value, codingPath: codingPath) }
                    if reader.is(key, "expectedTotal") {
                        return try reader.read(&total, at: value, codingPath: codingPath)
                    }
                    return nil
                }
                guard let number else { throw reader.missing("offset", codingPath: codingPath) }
                guard let total else { throw reader.missing("expectedTotal", codingPath: codingPath) }
                payload = .resumed(offset: number, expectedTotal: total)
            } else {
                return nil
            }
            return end
        }
        guard let payload else {
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        return (payload, end)
    }
}

extension ResponseHead: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("status", status)
            try buffer.entry("httpVersion", httpVersion)
            buffer.key("fieldLines")
            buffer.unkeyed(count: fieldLines.count)
            for field in fieldLines {
                try buffer.keyed {
                    try buffer.entry("name", field.name)
                    try buffer.entry("value", field.value)
                }
            }
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var status: Int?
        var httpVersion: String?
        var fieldLines: [Field]?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if reader.is(key, "status") { return try reader.read(&status, at: value, codingPath: codingPath) }
            if reader.is(key, "httpVersion") { return try reader.read(&httpVersion, at: value, codingPath: codingPath) }
            guard reader.is(key, "fieldLines") else {
                return nil
            }
            var lines: [Field] = []
            let (_, end) = try reader.readUnkeyed(at: value, codingPath: codingPath) { element in
                var name: String?
                var fieldValue: String?
                let end = try reader.readKeyed(at: element, codingPath: codingPath) { key, value in
                    if reader.is(key, "name") { return try reader.read(&name, at: value, codingPath: codingPath) }
                    if reader.is(key, "value") {
                        return try reader.read(&fieldValue, at: value, codingPath: codingPath)
                    }
                    return nil
                }
                guard let name else { throw reader.missing("name", codingPath: codingPath) }
                guard let fieldValue else { throw reader.missing("value", codingPath: codingPath) }
                lines.append(Field(name: name, value: fieldValue))
                return end
            }
            fieldLines = lines
            return end
        }
        guard let status else { throw reader.missing("status", codingPath: codingPath) }
        guard let httpVersion else { throw reader.missing("httpVersion", codingPath: codingPath) }
        guard let fieldLines else { throw reader.missing("fieldLines", codingPath: codingPath) }
        return (Self(status: status, httpVersion: httpVersion, fieldLines: fieldLines), end)
    }
}

extension TransferCompletion: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("error", ifPresent: error)
            try buffer.entry("bytesOnDisk", bytesOnDisk)
            try buffer.entry("metrics", metrics)
            try buffer.entry("digest", ifPresent: digest)
            try buffer.entry("finalStatus", ifPresent: finalStatus)
            try buffer.entry("peerTrust", ifPresent: peerTrust)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var completion = Self(error: nil)
        var bytesOnDisk: Int64?
        var metrics: TransferMetrics?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil
            }
            if reader.is(key, "error") { return try reader.read(&completion.error, at: value, codingPath: codingPath) }
            if reader.is(key, "bytesOnDisk") { return try reader.read(&bytesOnDisk, at: value, codingPath: codingPath) }
            if reader.is(key, "metrics") { return try reader.read(&metrics, at: value, codingPath: codingPath) }
            if reader.is(key, "digest") {
                return try reader.read(&completion.digest, at: value, codingPath: codingPath)
            }
            if reader.is(key, "finalStatus") {
                return try reader.read(&completion.finalStatus, at: value, codingPath: codingPath)
            }
            if reader.is(key, "peerTrust") {
                return try reader.read(&completion.peerTrust, at: value, codingPath: codingPath)
            }
            return nil
        }
        guard let bytesOnDisk else { throw reader.missing("bytesOnDisk", codingPath: codingPath) }
        guard let metrics else { throw reader.missing("metrics", codingPath: codingPath) }
        completion.bytesOnDisk = bytesOnDisk
        completion.metrics = metrics
        return (completion, end)
    }
}

extension TransferMetrics: DirectRecord {
    /// Each field's key and where it is, in the order they are written.
    private static let counts: [(key: StaticString, field: any WritableKeyPath<Self, Int64> & Sendable)] = [
        ("queuedMicroseconds", \.queuedMicroseconds), ("nameLookupMicroseconds", \.nameLookupMicroseconds),
        ("connectMicroseconds", \.connectMicroseconds), ("tlsMicroseconds", \.tlsMicroseconds),
        ("pretransferMicroseconds", \.pretransferMicroseconds), ("firstByteMicroseconds", \.firstByteMicroseconds),
        ("totalMicroseconds", \.totalMicroseconds), ("requestHeaderBytes", \.requestHeaderBytes),
        ("responseHeaderBytes", \.responseHeaderBytes), ("bodyBytesSent", \.bodyBytesSent),
        ("bodyBytesReceived", \.bodyBytesReceived), ("bodyBytesOnWire", \.bodyBytesOnWire),
    ]
    private static let numbers: [(key: StaticString, field: any WritableKeyPath<Self, Int> & Sendable)] = [
        ("httpVersion", \.httpVersion), ("remotePort", \.remotePort), ("localPort", \.localPort),
    ]
    private static let addresses: [(key: StaticString, field: any WritableKeyPath<Self, String> & Sendable)] = [
        ("remoteAddress", \.remoteAddress), ("localAddress", \.localAddress),
    ]

    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            // Each field named (not through `counts`: a key path read per field costs as much again as the rest).
            try buffer.entry("queuedMicroseconds", queuedMicroseconds)
            try buffer.entry("nameLookupMicroseconds", nameLookupMicroseconds)
            try buffer.entry("connectMicroseconds", connectMicroseconds)
            try buffer.entry("tlsMicroseconds", tlsMicroseconds)
            try buffer.entry("pretransferMicroseconds", pretransferMicroseconds)
            try buffer.entry("firstByteMicroseconds", firstByteMicroseconds)
            try buffer.entry("totalMicroseconds", totalMicroseconds)
            try buffer.entry("requestHeaderBytes", requestHeaderBytes)
            try buffer.entry("responseHeaderBytes", responseHeaderBytes)
            try buffer.entry("bodyBytesSent", bodyBytesSent)
            try buffer.entry("bodyBytesReceived", bodyBytesReceived)
            try buffer.entry("bodyBytesOnWire", bodyBytesOnWire)
            try buffer.entry("httpVersion", httpVersion)
            try buffer.entry("reusedConnection", reusedConnection)
            try buffer.entry("remotePort", remotePort)
            try buffer.entry("localPort", localPort)
            try buffer.entry("remoteAddress", remoteAddress)
            try buffer.entry("localAddress", localAddress)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var metrics = Self()
        // Which fields were read: a bit each, the counts', the numbers', the addresses', then reusedConnection's.
        var seen: UInt32 = 0
        var next = 0
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            // The keys come in the order they are written: the next count is looked at first.
            let index =
                next < counts.count && reader.is(key, counts[next].key)
                ? next : counts.firstIndex { reader.is(key, $0.key) }
            if let index {
                next = index + 1
                seen |= 1 << index
                return try reader.read(&metrics[keyPath: counts[index].field], at: value, codingPath: codingPath)
            }
            if let number = numbers.firstIndex(where: { reader.is(key, $0.key) }) {
                seen |= 1 << (counts.count + number)
                return try reader.read(&metrics[keyPath: numbers[number].field], at: value, codingPath: codingPath)
            }
            if let address = addresses.firstIndex(where: { reader.is(key, $0.key) }) {
                seen |= 1 << (counts.count + numbers.count + address)
                return try reader.read(&metrics[keyPath: addresses[address].field], at: value, codingPath: codingPath)
            }
            if reader.is(key, "reusedConnection") {
                seen |= 1 << (counts.count + numbers.count + addresses.count)
                return try reader.read(&metrics.reusedConnection, at: value, codingPath: codingPath)
            }
            return nil
        }
        let keys = counts.map(\.key) + numbers.map(\.key) + addresses.map(\.key) + ["reusedConnection"]
        if let missing = keys.indices.first(where: { seen & (1 << $0) == 0 }) {
            throw reader.missing(keys[missing], codingPath: codingPath)
        }
        return (metrics, end)
    }
}
