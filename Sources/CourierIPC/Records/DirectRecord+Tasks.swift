import Foundation

// The values of a task as courierd journals and lists it, written and read directly (``DirectRecord``): the keys
// and forms of their `Codable` conformances, in the same order. A field whose form is rare (a body, credentials,
// connection options, a segment map, a checksum) goes through its `Codable` conformance.

extension IPCMessage.TaskSnapshot: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        let optionals = [taskDescription != nil, waitingReason != nil, task != nil, outcome != nil, endedAt != nil]
        buffer.keyed(count: 6 + optionals.count { $0 } + (statusCode == nil ? 0 : 1))
        buffer.key("identifier")
        buffer.signed(Int64(identifier))
        if let taskDescription {
            buffer.key("taskDescription")
            buffer.string(taskDescription)
        }
        buffer.key("state")
        buffer.signed(Int64(state))
        buffer.key("countOfBytesReceived")
        buffer.signed(countOfBytesReceived)
        buffer.key("countOfBytesExpectedToReceive")
        buffer.signed(countOfBytesExpectedToReceive)
        buffer.key("countOfBytesSent")
        buffer.signed(countOfBytesSent)
        buffer.key("countOfBytesExpectedToSend")
        buffer.signed(countOfBytesExpectedToSend)
        if let waitingReason {
            buffer.key("waitingReason")
            buffer.string(waitingReason)
        }
        if let task {
            buffer.key("task")
            try task.writeRecord(to: buffer)
        }
        if let outcome {
            buffer.key("outcome")
            try buffer.value(outcome)
        }
        if let endedAt {
            buffer.key("endedAt")
            buffer.double(endedAt.timeIntervalSinceReferenceDate)
        }
        if let statusCode {
            buffer.key("statusCode")
            buffer.signed(Int64(statusCode))
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var identifier: Int?
        var state: Int?
        var counts: [Int64?] = [nil, nil, nil, nil]
        var snapshot = Self(identifier: 0, state: 0)
        let countKeys: [StaticString] = [
            "countOfBytesReceived", "countOfBytesExpectedToReceive", "countOfBytesSent", "countOfBytesExpectedToSend",
        ]
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil  // An optional left empty; a required one stays missing.
            }
            if reader.is(key, "identifier") || reader.is(key, "state") || reader.is(key, "statusCode") {
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                if reader.is(key, "identifier") {
                    identifier = read
                } else if reader.is(key, "state") {
                    state = read
                } else {
                    snapshot.statusCode = read
                }
                return end
            }
            if let index = countKeys.firstIndex(where: { reader.is(key, $0) }) {
                let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                counts[index] = read
                return end
            }
            if reader.is(key, "taskDescription") || reader.is(key, "waitingReason") {
                let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                if reader.is(key, "taskDescription") {
                    snapshot.taskDescription = read
                } else {
                    snapshot.waitingReason = read
                }
                return end
            }
            if reader.is(key, "task") {
                let (read, end) = try IPCMessage.BackgroundTask.readRecord(
                    from: reader,
                    at: value,
                    codingPath: codingPath
                )
                snapshot.task = read
                return end
            }
            if reader.is(key, "outcome") {
                let (read, end) = try reader.readValue(CourierError.self, at: value, codingPath: codingPath)
                snapshot.outcome = read
                return end
            }
            if reader.is(key, "endedAt") {
                let (read, end) = try reader.readValue(Date.self, at: value, codingPath: codingPath)
                snapshot.endedAt = read
                return end
            }
            return nil
        }
        guard let identifier else { throw reader.missing("identifier", codingPath: codingPath) }
        guard let state else { throw reader.missing("state", codingPath: codingPath) }
        for (key, count) in zip(countKeys, counts) where count == nil {
            throw reader.missing(key, codingPath: codingPath)
        }
        snapshot.identifier = identifier
        snapshot.state = state
        snapshot.countOfBytesReceived = counts[0] ?? 0
        snapshot.countOfBytesExpectedToReceive = counts[1] ?? 0
        snapshot.countOfBytesSent = counts[2] ?? 0
        snapshot.countOfBytesExpectedToSend = counts[3] ?? 0
        return (snapshot, end)
    }
}

extension IPCMessage.BackgroundTask: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        buffer.keyed(count: 2 + (createdInBackground == nil ? 0 : 1) + (startAfter == nil ? 0 : 1))
        buffer.key("identifier")
        buffer.signed(Int64(identifier))
        buffer.key("spec")
        try spec.writeRecord(to: buffer)
        if let createdInBackground {
            buffer.key("createdInBackground")
            buffer.bool(createdInBackground)
        }
        if let startAfter {
            buffer.key("startAfter")
            buffer.double(startAfter.timeIntervalSinceReferenceDate)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var identifier: Int?
        var spec: TransferSpec?
        var createdInBackground: Bool?
        var startAfter: Date?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil
            }
            if reader.is(key, "identifier") {
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                identifier = read
                return end
            }
            if reader.is(key, "spec") {
                let (read, end) = try TransferSpec.readRecord(from: reader, at: value, codingPath: codingPath)
                spec = read
                return end
            }
            if reader.is(key, "createdInBackground") {
                let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
                createdInBackground = read
                return end
            }
            if reader.is(key, "startAfter") {
                let (read, end) = try reader.readValue(Date.self, at: value, codingPath: codingPath)
                startAfter = read
                return end
            }
            return nil
        }
        guard let spec else {
            // The earlier form, the task's parts instead of a spec.
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        guard let identifier else { throw reader.missing("identifier", codingPath: codingPath) }
        var task = Self(identifier: identifier, spec: spec)
        task.createdInBackground = createdInBackground
        task.startAfter = startAfter
        return (task, end)
    }
}

extension TransferSpec: DirectRecord {
    /// A spec's defaults: a field that keeps its default is not written, and one that is not read takes it.
    private static let defaults = TransferSpec(url: "")

    package func writeRecord(to buffer: RecordBuffer) throws {
        let defaults = Self.defaults
        let written = [
            true, method != defaults.method, headers != defaults.headers, body != defaults.body,
            bodyOffset != defaults.bodyOffset, sink != defaults.sink, resumeOffset != defaults.resumeOffset,
            rangeLength != defaults.rangeLength, segments != defaults.segments, segmentMap != nil,
            holdRedirectAndAuth != defaults.holdRedirectAndAuth, askResponse != defaults.askResponse,
            noBody != defaults.noBody, upgrade != defaults.upgrade, decodesContent != defaults.decodesContent,
            http2 != defaults.http2, authentication != defaults.authentication, proxy != nil, noProxy != nil,
            proxyAuthentication != defaults.proxyAuthentication,
            maximumBytesPerSecond != defaults.maximumBytesPerSecond,
            maximumBodyLength != defaults.maximumBodyLength,
            idleTimeoutMilliseconds != defaults.idleTimeoutMilliseconds,
            totalTimeoutMilliseconds != defaults.totalTimeoutMilliseconds, priority != defaults.priority,
            digest != nil, announcedDigest != defaults.announcedDigest, connection != nil, task != nil,
        ]
        buffer.keyed(count: written.count { $0 })
        var field = 0
        /// Whether the next field is written (and its key, when it is).
        func next(_ key: StaticString) -> Bool {
            defer { field += 1 }
            if written[field] {
                buffer.key(key)
            }
            return written[field]
        }
        _ = next("url")
        buffer.string(url)
        if next("method") { buffer.string(method) }
        if next("headers") {
            buffer.unkeyed(count: headers.count)
            for header in headers {
                buffer.string(header)
            }
        }
        if next("body") { try buffer.value(body) }
        if next("bodyOffset") { buffer.signed(bodyOffset) }
        if next("sink") {
            if case .file(let path, let append) = sink {
                buffer.keyed(count: 1)
                buffer.key("file")
                buffer.keyed(count: 2)
                buffer.key("path")
                buffer.string(path)
                buffer.key("append")
                buffer.bool(append)
            } else {
                try buffer.value(sink)
            }
        }
        if next("resumeOffset") { buffer.signed(resumeOffset) }
        if next("rangeLength") { buffer.signed(rangeLength) }
        if next("segments") { buffer.signed(Int64(segments)) }
        if next("segmentMap"), let segmentMap { try buffer.value(segmentMap) }
        if next("holdRedirectAndAuth") { buffer.bool(holdRedirectAndAuth) }
        if next("askResponse") { buffer.bool(askResponse) }
        if next("noBody") { buffer.bool(noBody) }
        if next("upgrade") { buffer.bool(upgrade) }
        if next("decodesContent") { buffer.bool(decodesContent) }
        if next("http2") { buffer.bool(http2) }
        if next("authentication") { try buffer.value(authentication) }
        if next("proxy"), let proxy { buffer.string(proxy) }
        if next("noProxy"), let noProxy { buffer.string(noProxy) }
        if next("proxyAuthentication") { try buffer.value(proxyAuthentication) }
        if next("maximumBytesPerSecond") { buffer.signed(maximumBytesPerSecond) }
        if next("maximumBodyLength") { buffer.signed(maximumBodyLength) }
        if next("idleTimeoutMilliseconds") { buffer.signed(idleTimeoutMilliseconds) }
        if next("totalTimeoutMilliseconds") { buffer.signed(totalTimeoutMilliseconds) }
        if next("priority") { buffer.signed(Int64(priority)) }
        if next("digest"), let digest { try buffer.value(digest) }
        if next("announcedDigest") { buffer.bool(announcedDigest) }
        if next("connection"), let connection { try buffer.value(connection) }
        if next("task"), let task { try task.writeRecord(to: buffer) }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var spec = Self.defaults
        var url: String?
        func integer<Value: FixedWidthInteger>(_ value: Int, _ set: (Value) -> Void) throws -> Int {
            let (read, end) = try reader.readInteger(Value.self, at: value, codingPath: codingPath)
            set(read)
            return end
        }
        func bool(_ value: Int, _ set: (Bool) -> Void) throws -> Int {
            let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
            set(read)
            return end
        }
        func string(_ value: Int, _ set: (String) -> Void) throws -> Int {
            let (read, end) = try reader.readString(at: value, codingPath: codingPath)
            set(read)
            return end
        }
        func other<Value: Decodable>(_ value: Int, _ set: (Value) -> Void) throws -> Int {
            let (read, end) = try reader.readValue(Value.self, at: value, codingPath: codingPath)
            set(read)
            return end
        }
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value -> Int? in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil  // Absent, as `decodeIfPresent` reads a null: the default.
            }
            switch key.count {
            case 3 where reader.is(key, "url"): return try string(value) { url = $0 }
            case 4 where reader.is(key, "sink"):
                let (read, end) = try readSink(from: reader, at: value, codingPath: codingPath)
                spec.sink = read
                return end
            case 4 where reader.is(key, "body"): return try other(value) { spec.body = $0 }
            case 4 where reader.is(key, "task"):
                let (read, end) = try TaskDetails.readRecord(from: reader, at: value, codingPath: codingPath)
                spec.task = read
                return end
            case 5 where reader.is(key, "http2"): return try bool(value) { spec.http2 = $0 }
            case 5 where reader.is(key, "proxy"): return try string(value) { spec.proxy = $0 }
            case 6 where reader.is(key, "method"): return try string(value) { spec.method = $0 }
            case 6 where reader.is(key, "noBody"): return try bool(value) { spec.noBody = $0 }
            case 6 where reader.is(key, "digest"): return try other(value) { spec.digest = $0 }
            case 7 where reader.is(key, "headers"):
                var headers: [String] = []
                let (_, end) = try reader.readUnkeyed(at: value, codingPath: codingPath) { element in
                    let (header, end) = try reader.readString(at: element, codingPath: codingPath)
                    headers.append(header)
                    return end
                }
                spec.headers = headers
                return end
            case 7 where reader.is(key, "upgrade"): return try bool(value) { spec.upgrade = $0 }
            case 7 where reader.is(key, "noProxy"): return try string(value) { spec.noProxy = $0 }
            case 8 where reader.is(key, "segments"): return try integer(value) { spec.segments = $0 }
            case 8 where reader.is(key, "priority"): return try integer(value) { spec.priority = $0 }
            case 10 where reader.is(key, "bodyOffset"): return try integer(value) { spec.bodyOffset = $0 }
            case 10 where reader.is(key, "segmentMap"): return try other(value) { spec.segmentMap = $0 }
            case 10 where reader.is(key, "connection"): return try other(value) { spec.connection = $0 }
            case 11 where reader.is(key, "askResponse"): return try bool(value) { spec.askResponse = $0 }
            case 11 where reader.is(key, "rangeLength"): return try integer(value) { spec.rangeLength = $0 }
            default: break
            }
            if reader.is(key, "resumeOffset") { return try integer(value) { spec.resumeOffset = $0 } }
            if reader.is(key, "holdRedirectAndAuth") { return try bool(value) { spec.holdRedirectAndAuth = $0 } }
            if reader.is(key, "decodesContent") { return try bool(value) { spec.decodesContent = $0 } }
            if reader.is(key, "authentication") { return try other(value) { spec.authentication = $0 } }
            if reader.is(key, "proxyAuthentication") { return try other(value) { spec.proxyAuthentication = $0 } }
            if reader.is(key, "maximumBytesPerSecond") {
                return try integer(value) { spec.maximumBytesPerSecond = $0 }
            }
            if reader.is(key, "maximumBodyLength") { return try integer(value) { spec.maximumBodyLength = $0 } }
            if reader.is(key, "idleTimeoutMilliseconds") {
                return try integer(value) { spec.idleTimeoutMilliseconds = $0 }
            }
            if reader.is(key, "totalTimeoutMilliseconds") {
                return try integer(value) { spec.totalTimeoutMilliseconds = $0 }
            }
            if reader.is(key, "announcedDigest") { return try bool(value) { spec.announcedDigest = $0 } }
            return nil
        }
        guard let url else { throw reader.missing("url", codingPath: codingPath) }
        spec.url = url
        return (spec, end)
    }
}

extension TransferSpec {
    /// A file sink read directly; any other through its `Codable` conformance.
    private static func readSink(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (Sink, Int) {
        var file: (path: String?, append: Bool?)?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value -> Int? in
            guard reader.is(key, "file") else {
                return nil
            }
            file = (nil, nil)
            return try reader.readKeyed(at: value, codingPath: codingPath) { key, value -> Int? in
                if reader.is(key, "path") {
                    let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                    file?.path = read
                    return end
                }
                if reader.is(key, "append") {
                    let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
                    file?.append = read
                    return end
                }
                return nil
            }
        }
        guard let file, let path = file.path, let append = file.append,
            try reader.count(at: offset + 1, codingPath: codingPath) == 1
        else {
            return try reader.readThroughCodable(Sink.self, at: offset, codingPath: codingPath)
        }
        return (.file(path: path, append: append), end)
    }
}

extension TransferSpec.TaskDetails: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        let optionals = [
            taskDescription != nil, resumeData != nil, earliestBeginDate != nil, countOfBytesClientExpectsToSend != nil,
            countOfBytesClientExpectsToReceive != nil, expectedChecksum != nil, maximumBytesPerSecond != nil,
            maximumSegments != nil, credentialURL != nil,
        ]
        buffer.keyed(count: 3 + optionals.count { $0 })
        buffer.key("kind")
        buffer.string(kind.rawValue)
        if let taskDescription {
            buffer.key("taskDescription")
            buffer.string(taskDescription)
        }
        buffer.key("priority")
        buffer.float(priority)
        if let resumeData {
            buffer.key("resumeData")
            try buffer.value(resumeData)
        }
        buffer.key("reportsToDelegate")
        buffer.bool(reportsToDelegate)
        if let earliestBeginDate {
            buffer.key("earliestBeginDate")
            buffer.double(earliestBeginDate.timeIntervalSinceReferenceDate)
        }
        if let countOfBytesClientExpectsToSend {
            buffer.key("countOfBytesClientExpectsToSend")
            buffer.signed(countOfBytesClientExpectsToSend)
        }
        if let countOfBytesClientExpectsToReceive {
            buffer.key("countOfBytesClientExpectsToReceive")
            buffer.signed(countOfBytesClientExpectsToReceive)
        }
        if let expectedChecksum {
            buffer.key("expectedChecksum")
            try buffer.value(expectedChecksum)
        }
        if let maximumBytesPerSecond {
            buffer.key("maximumBytesPerSecond")
            buffer.signed(maximumBytesPerSecond)
        }
        if let maximumSegments {
            buffer.key("maximumSegments")
            buffer.signed(Int64(maximumSegments))
        }
        if let credentialURL {
            buffer.key("credentialURL")
            buffer.string(credentialURL)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var kind: Kind?
        var priority: Float?
        var reportsToDelegate: Bool?
        var details = Self(kind: .data)
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value -> Int? in
            if try reader.isNull(at: value, codingPath: codingPath) {
                return nil
            }
            if reader.is(key, "kind") {
                let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                guard let read = Kind(rawValue: read) else {
                    throw reader.damaged("no task kind \(read)", at: value, codingPath: codingPath)
                }
                kind = read
                return end
            }
            if reader.is(key, "priority") {
                priority = try reader.float(at: value, codingPath: codingPath)
                return value + 5
            }
            if reader.is(key, "reportsToDelegate") {
                let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
                reportsToDelegate = read
                return end
            }
            if reader.is(key, "taskDescription") || reader.is(key, "credentialURL") {
                let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                if reader.is(key, "taskDescription") {
                    details.taskDescription = read
                } else {
                    details.credentialURL = read
                }
                return end
            }
            if reader.is(key, "countOfBytesClientExpectsToSend") || reader.is(key, "countOfBytesClientExpectsToReceive")
                || reader.is(key, "maximumBytesPerSecond")
            {
                let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                if reader.is(key, "countOfBytesClientExpectsToSend") {
                    details.countOfBytesClientExpectsToSend = read
                } else if reader.is(key, "countOfBytesClientExpectsToReceive") {
                    details.countOfBytesClientExpectsToReceive = read
                } else {
                    details.maximumBytesPerSecond = read
                }
                return end
            }
            if reader.is(key, "maximumSegments") {
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                details.maximumSegments = read
                return end
            }
            if reader.is(key, "resumeData") {
                let (read, end) = try reader.readValue(Data.self, at: value, codingPath: codingPath)
                details.resumeData = read
                return end
            }
            if reader.is(key, "earliestBeginDate") {
                let (read, end) = try reader.readValue(Date.self, at: value, codingPath: codingPath)
                details.earliestBeginDate = read
                return end
            }
            if reader.is(key, "expectedChecksum") {
                let (read, end) = try reader.readValue(Checksum.self, at: value, codingPath: codingPath)
                details.expectedChecksum = read
                return end
            }
            return nil
        }
        guard let kind else { throw reader.missing("kind", codingPath: codingPath) }
        guard let priority else { throw reader.missing("priority", codingPath: codingPath) }
        guard let reportsToDelegate else { throw reader.missing("reportsToDelegate", codingPath: codingPath) }
        details.kind = kind
        details.priority = priority
        details.reportsToDelegate = reportsToDelegate
        return (details, end)
    }
}
