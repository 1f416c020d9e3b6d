import Foundation

// The values of a task as courierd journals and lists it, written and read directly (``DirectRecord``): the keys
// and forms of their `Codable` conformances, in the same order. A field whose form is rare (a body, credentials,
// connection options, a segment map, a checksum) goes through its `Codable` conformance.

extension IPCMessage.TaskSnapshot: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("identifier", identifier)
            try buffer.entry("taskDescription", ifPresent: taskDescription)
            try buffer.entry("state", state)
            try buffer.entry("countOfBytesReceived", countOfBytesReceived)
            try buffer.entry("countOfBytesExpectedToReceive", countOfBytesExpectedToReceive)
            try buffer.entry("countOfBytesSent", countOfBytesSent)
            try buffer.entry("countOfBytesExpectedToSend", countOfBytesExpectedToSend)
            try buffer.entry("waitingReason", ifPresent: waitingReason)
            try buffer.entry("task", ifPresent: task)
            try buffer.entry("outcome", ifPresent: outcome)
            try buffer.entry("endedAt", ifPresent: endedAt)
            try buffer.entry("statusCode", ifPresent: statusCode)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var identifier: Int?
        var state: Int?
        var received: Int64?
        var expectedToReceive: Int64?
        var sent: Int64?
        var expectedToSend: Int64?
        var snapshot = Self(identifier: 0, state: 0)
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil  // An optional left empty; a required one stays missing.
            }
            func read<Value: Decodable>(_ field: inout Value?) throws -> Int {
                try reader.read(&field, at: value, codingPath: codingPath)
            }
            if reader.is(key, "identifier") { return try read(&identifier) }
            if reader.is(key, "taskDescription") { return try read(&snapshot.taskDescription) }
            if reader.is(key, "state") { return try read(&state) }
            if reader.is(key, "countOfBytesReceived") { return try read(&received) }
            if reader.is(key, "countOfBytesExpectedToReceive") { return try read(&expectedToReceive) }
            if reader.is(key, "countOfBytesSent") { return try read(&sent) }
            if reader.is(key, "countOfBytesExpectedToSend") { return try read(&expectedToSend) }
            if reader.is(key, "waitingReason") { return try read(&snapshot.waitingReason) }
            if reader.is(key, "task") { return try read(&snapshot.task) }
            if reader.is(key, "outcome") { return try read(&snapshot.outcome) }
            if reader.is(key, "endedAt") { return try read(&snapshot.endedAt) }
            if reader.is(key, "statusCode") { return try read(&snapshot.statusCode) }
            return nil
        }
        guard let identifier else { throw reader.missing("identifier", codingPath: codingPath) }
        guard let state else { throw reader.missing("state", codingPath: codingPath) }
        guard let received else { throw reader.missing("countOfBytesReceived", codingPath: codingPath) }
        guard let expectedToReceive else {
            throw reader.missing("countOfBytesExpectedToReceive", codingPath: codingPath)
        }
        guard let sent else { throw reader.missing("countOfBytesSent", codingPath: codingPath) }
        guard let expectedToSend else { throw reader.missing("countOfBytesExpectedToSend", codingPath: codingPath) }
        snapshot.identifier = identifier
        snapshot.state = state
        snapshot.countOfBytesReceived = received
        snapshot.countOfBytesExpectedToReceive = expectedToReceive
        snapshot.countOfBytesSent = sent
        snapshot.countOfBytesExpectedToSend = expectedToSend
        return (snapshot, end)
    }
}

extension IPCMessage.BackgroundTask: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try writeEntries(to: buffer)
        }
    }

    /// Its entries, for a record that holds them beside keys of its own (the journal's `TaskRecord`).
    package func writeEntries(to buffer: RecordBuffer) throws {
        try buffer.entry("identifier", identifier)
        try buffer.entry("spec", spec)
        try buffer.entry("createdInBackground", ifPresent: createdInBackground)
        try buffer.entry("startAfter", ifPresent: startAfter)
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var fields = RecordFields()
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil
            }
            return try fields.read(key, at: value, from: reader, codingPath: codingPath)
        }
        guard let task = try fields.task(reader: reader, codingPath: codingPath) else {
            // The earlier form, the task's parts instead of a spec.
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        return (task, end)
    }

    /// A task's fields as its keyed container is read, in one pass: a record that holds them beside keys of its own
    /// (the journal's `TaskRecord`) reads those keys itself.
    package struct RecordFields {
        var identifier: Int?
        var spec: TransferSpec?
        var createdInBackground: Bool?
        var startAfter: Date?

        package init() {}

        /// Reads the entry `key` at `value` when it is one of a task's, and says where it ends; nil otherwise.
        package mutating func read(
            _ key: UnsafeRawBufferPointer,
            at value: Int,
            from reader: RecordReader,
            codingPath: [any CodingKey]
        ) throws -> Int? {
            if reader.is(key, "identifier") { return try reader.read(&identifier, at: value, codingPath: codingPath) }
            if reader.is(key, "spec") { return try reader.read(&spec, at: value, codingPath: codingPath) }
            if reader.is(key, "createdInBackground") {
                return try reader.read(&createdInBackground, at: value, codingPath: codingPath)
            }
            if reader.is(key, "startAfter") { return try reader.read(&startAfter, at: value, codingPath: codingPath) }
            return nil
        }

        /// The task; nil when the container had no spec (the earlier form, its parts: for the caller to read
        /// otherwise).
        package func task(reader: RecordReader, codingPath: [any CodingKey]) throws -> IPCMessage.BackgroundTask? {
            guard let spec else {
                return nil
            }
            guard let identifier else { throw reader.missing("identifier", codingPath: codingPath) }
            var task = IPCMessage.BackgroundTask(identifier: identifier, spec: spec)
            task.createdInBackground = createdInBackground
            task.startAfter = startAfter
            return task
        }
    }
}

extension TransferSpec: DirectRecord {
    /// A spec's defaults: a field that keeps its default is not written, and one that is not read takes it.
    private static let defaults = TransferSpec(url: "")

    package func writeRecord(to buffer: RecordBuffer) throws {
        let defaults = Self.defaults
        /// Writes a field that differs from its default, as ``encode(to:)`` does.
        func field<Value: Encodable & Equatable>(_ key: StaticString, _ value: Value, _ fallback: Value) throws {
            if value != fallback {
                try buffer.entry(key, value)
            }
        }
        try buffer.keyed {
            try buffer.entry("url", url)
            try field("method", method, defaults.method)
            try field("headers", headers, defaults.headers)
            try field("body", body, defaults.body)
            try field("bodyOffset", bodyOffset, defaults.bodyOffset)
            if case .file(let path, let append) = sink {
                // The common sink written directly, as its synthesized conformance writes it.
                buffer.key("sink")
                try buffer.keyed {
                    buffer.key("file")
                    try buffer.keyed {
                        try buffer.entry("path", path)
                        try buffer.entry("append", append)
                    }
                }
            } else {
                try field("sink", sink, defaults.sink)
            }
            try field("resumeOffset", resumeOffset, defaults.resumeOffset)
            try field("rangeLength", rangeLength, defaults.rangeLength)
            try field("segments", segments, defaults.segments)
            try buffer.entry("segmentMap", ifPresent: segmentMap)
            try field("holdRedirectAndAuth", holdRedirectAndAuth, defaults.holdRedirectAndAuth)
            try field("askResponse", askResponse, defaults.askResponse)
            try field("noBody", noBody, defaults.noBody)
            try field("upgrade", upgrade, defaults.upgrade)
            try field("decodesContent", decodesContent, defaults.decodesContent)
            try field("http2", http2, defaults.http2)
            try field("authentication", authentication, defaults.authentication)
            try buffer.entry("proxy", ifPresent: proxy)
            try buffer.entry("noProxy", ifPresent: noProxy)
            try field("proxyAuthentication", proxyAuthentication, defaults.proxyAuthentication)
            try field("maximumBytesPerSecond", maximumBytesPerSecond, defaults.maximumBytesPerSecond)
            try field("maximumBodyLength", maximumBodyLength, defaults.maximumBodyLength)
            try field("idleTimeoutMilliseconds", idleTimeoutMilliseconds, defaults.idleTimeoutMilliseconds)
            try field("totalTimeoutMilliseconds", totalTimeoutMilliseconds, defaults.totalTimeoutMilliseconds)
            try field("priority", priority, defaults.priority)
            try buffer.entry("digest", ifPresent: digest)
            try field("announcedDigest", announcedDigest, defaults.announcedDigest)
            try buffer.entry("connection", ifPresent: connection)
            try buffer.entry("task", ifPresent: task)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var spec = Self.defaults
        var url: String?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value -> Int? in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil  // Absent, as `decodeIfPresent` reads a null: the default.
            }
            func read<Value: Decodable>(_ field: inout Value) throws -> Int {
                try reader.read(&field, at: value, codingPath: codingPath)
            }
            func read<Value: Decodable>(_ field: inout Value?) throws -> Int {
                try reader.read(&field, at: value, codingPath: codingPath)
            }
            if reader.is(key, "url") { return try read(&url) }
            if reader.is(key, "method") { return try read(&spec.method) }
            if reader.is(key, "headers") {
                var headers: [String] = []
                let (_, end) = try reader.readUnkeyed(at: value, codingPath: codingPath) { element in
                    var header = ""
                    let end = try reader.read(&header, at: element, codingPath: codingPath)
                    headers.append(header)
                    return end
                }
                spec.headers = headers
                return end
            }
            if reader.is(key, "sink") {
                let (sink, end) = try readSink(from: reader, at: value, codingPath: codingPath)
                spec.sink = sink
                return end
            }
            if reader.is(key, "body") { return try read(&spec.body) }
            if reader.is(key, "bodyOffset") { return try read(&spec.bodyOffset) }
            if reader.is(key, "resumeOffset") { return try read(&spec.resumeOffset) }
            if reader.is(key, "rangeLength") { return try read(&spec.rangeLength) }
            if reader.is(key, "segments") { return try read(&spec.segments) }
            if reader.is(key, "segmentMap") { return try read(&spec.segmentMap) }
            if reader.is(key, "holdRedirectAndAuth") { return try read(&spec.holdRedirectAndAuth) }
            if reader.is(key, "askResponse") { return try read(&spec.askResponse) }
            if reader.is(key, "noBody") { return try read(&spec.noBody) }
            if reader.is(key, "upgrade") { return try read(&spec.upgrade) }
            if reader.is(key, "decodesContent") { return try read(&spec.decodesContent) }
            if reader.is(key, "http2") { return try read(&spec.http2) }
            if reader.is(key, "authentication") { return try read(&spec.authentication) }
            if reader.is(key, "proxy") { return try read(&spec.proxy) }
            if reader.is(key, "noProxy") { return try read(&spec.noProxy) }
            if reader.is(key, "proxyAuthentication") { return try read(&spec.proxyAuthentication) }
            if reader.is(key, "maximumBytesPerSecond") { return try read(&spec.maximumBytesPerSecond) }
            if reader.is(key, "maximumBodyLength") { return try read(&spec.maximumBodyLength) }
            if reader.is(key, "idleTimeoutMilliseconds") { return try read(&spec.idleTimeoutMilliseconds) }
            if reader.is(key, "totalTimeoutMilliseconds") { return try read(&spec.totalTimeoutMilliseconds) }
            if reader.is(key, "priority") { return try read(&spec.priority) }
            if reader.is(key, "digest") { return try read(&spec.digest) }
            if reader.is(key, "announcedDigest") { return try read(&spec.announcedDigest) }
            if reader.is(key, "connection") { return try read(&spec.connection) }
            if reader.is(key, "task") { return try read(&spec.task) }
            return nil
        }
        guard let url else { throw reader.missing("url", codingPath: codingPath) }
        spec.url = url
        return (spec, end)
    }

    /// A file sink read directly; any other through its `Codable` conformance.
    private static func readSink(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (Sink, Int) {
        var path: String?
        var append: Bool?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value -> Int? in
            guard reader.is(key, "file") else {
                return nil
            }
            return try reader.readKeyed(at: value, codingPath: codingPath) { key, value -> Int? in
                if reader.is(key, "path") { return try reader.read(&path, at: value, codingPath: codingPath) }
                if reader.is(key, "append") { return try reader.read(&append, at: value, codingPath: codingPath) }
                return nil
            }
        }
        guard let path, let append, try reader.count(at: offset + 1, codingPath: codingPath) == 1 else {
            return try reader.readThroughCodable(Sink.self, at: offset, codingPath: codingPath)
        }
        return (.file(path: path, append: append), end)
    }
}

extension TransferSpec.TaskDetails: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        try buffer.keyed {
            try buffer.entry("kind", kind.rawValue)
            try buffer.entry("taskDescription", ifPresent: taskDescription)
            try buffer.entry("priority", priority)
            try buffer.entry("resumeData", ifPresent: resumeData)
            try buffer.entry("reportsToDelegate", reportsToDelegate)
            try buffer.entry("earliestBeginDate", ifPresent: earliestBeginDate)
            try buffer.entry("countOfBytesClientExpectsToSend", ifPresent: countOfBytesClientExpectsToSend)
            try buffer.entry("countOfBytesClientExpectsToReceive", ifPresent: countOfBytesClientExpectsToReceive)
            try buffer.entry("expectedChecksum", ifPresent: expectedChecksum)
            try buffer.entry("maximumBytesPerSecond", ifPresent: maximumBytesPerSecond)
            try buffer.entry("maximumSegments", ifPresent: maximumSegments)
            try buffer.entry("credentialURL", ifPresent: credentialURL)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var kind: String?
        var priority: Float?
        var reportsToDelegate: Bool?
        var details = Self(kind: .data)
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value -> Int? in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil
            }
            func read<Value: Decodable>(_ field: inout Value?) throws -> Int {
                try reader.read(&field, at: value, codingPath: codingPath)
            }
            if reader.is(key, "kind") { return try read(&kind) }
            if reader.is(key, "taskDescription") { return try read(&details.taskDescription) }
            if reader.is(key, "priority") { return try read(&priority) }
            if reader.is(key, "resumeData") { return try read(&details.resumeData) }
            if reader.is(key, "reportsToDelegate") { return try read(&reportsToDelegate) }
            if reader.is(key, "earliestBeginDate") { return try read(&details.earliestBeginDate) }
            if reader.is(key, "countOfBytesClientExpectsToSend") {
                return try read(&details.countOfBytesClientExpectsToSend)
            }
            if reader.is(key, "countOfBytesClientExpectsToReceive") {
                return try read(&details.countOfBytesClientExpectsToReceive)
            }
            if reader.is(key, "expectedChecksum") { return try read(&details.expectedChecksum) }
            if reader.is(key, "maximumBytesPerSecond") { return try read(&details.maximumBytesPerSecond) }
            if reader.is(key, "maximumSegments") { return try read(&details.maximumSegments) }
            if reader.is(key, "credentialURL") { return try read(&details.credentialURL) }
            return nil
        }
        guard let kind else { throw reader.missing("kind", codingPath: codingPath) }
        guard let priority else { throw reader.missing("priority", codingPath: codingPath) }
        guard let reportsToDelegate else { throw reader.missing("reportsToDelegate", codingPath: codingPath) }
        guard let known = Kind(rawValue: kind) else {
            throw reader.damaged("no task kind \(kind)", at: offset, codingPath: codingPath)
        }
        details.kind = known
        details.priority = priority
        details.reportsToDelegate = reportsToDelegate
        return (details, end)
    }
}
