import Foundation

// The values of a task's events, written and read directly (``DirectRecord``): the keys and forms of their
// synthesized `Codable` conformances, in the same order; an optional that is nil is left out, as
// `encodeIfPresent` leaves it. A form these methods do not write themselves (a rare payload, an error, a digest)
// goes through its `Codable` conformance.

extension IPCMessage.Events: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        buffer.keyed(count: 3)
        buffer.key("session")
        buffer.string(session)
        buffer.key("events")
        buffer.unkeyed(count: events.count)
        for event in events {
            try event.writeRecord(to: buffer)
        }
        buffer.key("finished")
        buffer.bool(finished)
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
            if reader.is(key, "session") {
                let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                session = read
                return end
            }
            if reader.is(key, "events") {
                var read: [IPCMessage.SequencedEvent] = []
                let (_, end) = try reader.readUnkeyed(at: value, codingPath: codingPath) { element in
                    let (event, end) = try IPCMessage.SequencedEvent.readRecord(
                        from: reader,
                        at: element,
                        codingPath: codingPath
                    )
                    read.append(event)
                    return end
                }
                events = read
                return end
            }
            if reader.is(key, "finished") {
                let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
                finished = read
                return end
            }
            return nil
        }
        guard let session else { throw reader.missing("session", codingPath: codingPath) }
        guard let events else { throw reader.missing("events", codingPath: codingPath) }
        guard let finished else { throw reader.missing("finished", codingPath: codingPath) }
        return (Self(session: session, events: events, finished: finished), end)
    }
}

extension IPCMessage.SequencedEvent: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        buffer.keyed(count: 3)
        buffer.key("sequence")
        buffer.unsigned(sequence)
        buffer.key("task")
        buffer.signed(Int64(task))
        buffer.key("event")
        try event.writeRecord(to: buffer)
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
            if reader.is(key, "sequence") {
                let (read, end) = try reader.readInteger(UInt64.self, at: value, codingPath: codingPath)
                sequence = read
                return end
            }
            if reader.is(key, "task") {
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                task = read
                return end
            }
            if reader.is(key, "event") {
                let (read, end) = try IPCMessage.BackgroundEvent.readRecord(
                    from: reader,
                    at: value,
                    codingPath: codingPath
                )
                event = read
                return end
            }
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
        buffer.keyed(count: 2)
        buffer.key("progress")
        progress.writeRecord(to: buffer)
        buffer.key("payload")
        try payload.writeRecord(to: buffer)
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var progress: TransferProgress?
        var payload: TransferEvent.Payload?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            if reader.is(key, "progress") {
                let (read, end) = try TransferProgress.readRecord(from: reader, at: value, codingPath: codingPath)
                progress = read
                return end
            }
            if reader.is(key, "payload") {
                let (read, end) = try TransferEvent.Payload.readRecord(from: reader, at: value, codingPath: codingPath)
                payload = read
                return end
            }
            return nil
        }
        guard let progress else { throw reader.missing("progress", codingPath: codingPath) }
        guard let payload else { throw reader.missing("payload", codingPath: codingPath) }
        return (Self(payload, progress: progress), end)
    }
}

extension TransferProgress: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) {
        buffer.keyed(count: bytesOnDisk == nil ? 4 : 5)
        buffer.key("received")
        buffer.signed(received)
        buffer.key("expectedToReceive")
        buffer.signed(expectedToReceive)
        buffer.key("sent")
        buffer.signed(sent)
        buffer.key("expectedToSend")
        buffer.signed(expectedToSend)
        if let bytesOnDisk {
            buffer.key("bytesOnDisk")
            buffer.signed(bytesOnDisk)
        }
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var counts: [Int64?] = [nil, nil, nil, nil]
        var bytesOnDisk: Int64?
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            let index: Int
            if reader.is(key, "received") {
                index = 0
            } else if reader.is(key, "expectedToReceive") {
                index = 1
            } else if reader.is(key, "sent") {
                index = 2
            } else if reader.is(key, "expectedToSend") {
                index = 3
            } else if reader.is(key, "bytesOnDisk") {
                let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                bytesOnDisk = read
                return end
            } else {
                return nil
            }
            let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
            counts[index] = read
            return end
        }
        guard let received = counts[0] else { throw reader.missing("received", codingPath: codingPath) }
        guard let expectedToReceive = counts[1] else {
            throw reader.missing("expectedToReceive", codingPath: codingPath)
        }
        guard let sent = counts[2] else { throw reader.missing("sent", codingPath: codingPath) }
        guard let expectedToSend = counts[3] else { throw reader.missing("expectedToSend", codingPath: codingPath) }
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
        switch self {
        case .response(let held, let resumeOffset, let head):
            buffer.keyed(count: 1)
            buffer.key("response")
            buffer.keyed(count: 3)
            buffer.key("held")
            buffer.bool(held)
            buffer.key("resumeOffset")
            buffer.signed(resumeOffset)
            buffer.key("head")
            head.writeRecord(to: buffer)
        case .progress:
            buffer.keyed(count: 1)
            buffer.key("progress")
            buffer.keyed(count: 0)
        case .complete(let completion):
            buffer.keyed(count: 1)
            buffer.key("complete")
            buffer.keyed(count: 1)
            buffer.key("_0")
            try completion.writeRecord(to: buffer)
        case .relocated(let url):
            buffer.keyed(count: 1)
            buffer.key("relocated")
            buffer.keyed(count: 1)
            buffer.key("url")
            buffer.string(url)
        case .downloaded(let path):
            buffer.keyed(count: 1)
            buffer.key("downloaded")
            buffer.keyed(count: 1)
            buffer.key("path")
            buffer.string(path)
        case .resumed(let offset, let expectedTotal):
            buffer.keyed(count: 1)
            buffer.key("resumed")
            buffer.keyed(count: 2)
            buffer.key("offset")
            buffer.signed(offset)
            buffer.key("expectedTotal")
            buffer.signed(expectedTotal)
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
            if reader.is(key, "response") {
                var held: Bool?
                var resumeOffset: Int64?
                var head: ResponseHead?
                let end = try reader.readKeyed(at: value, codingPath: codingPath) { key, value in
                    if reader.is(key, "held") {
                        let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
                        held = read
                        return end
                    }
                    if reader.is(key, "resumeOffset") {
                        let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                        resumeOffset = read
                        return end
                    }
                    if reader.is(key, "head") {
                        let (read, end) = try ResponseHead.readRecord(from: reader, at: value, codingPath: codingPath)
                        head = read
                        return end
                    }
                    return nil
                }
                guard let held else { throw reader.missing("held", codingPath: codingPath) }
                guard let resumeOffset else { throw reader.missing("resumeOffset", codingPath: codingPath) }
                guard let head else { throw reader.missing("head", codingPath: codingPath) }
                payload = .response(held: held, resumeOffset: resumeOffset, head: head)
                return end
            }
            if reader.is(key, "progress") {
                payload = .progress
                return try reader.readKeyed(at: value, codingPath: codingPath) { _, _ in nil }
            }
            if reader.is(key, "complete") {
                var completion: TransferCompletion?
                let end = try reader.readKeyed(at: value, codingPath: codingPath) { key, value in
                    guard reader.is(key, "_0") else {
                        return nil
                    }
                    let (read, end) = try TransferCompletion.readRecord(from: reader, at: value, codingPath: codingPath)
                    completion = read
                    return end
                }
                guard let completion else { throw reader.missing("_0", codingPath: codingPath) }
                payload = .complete(completion)
                return end
            }
            if reader.is(key, "relocated") || reader.is(key, "downloaded") {
                let relocated = reader.is(key, "relocated")
                var text: String?
                let end = try reader.readKeyed(at: value, codingPath: codingPath) { key, value in
                    guard reader.is(key, relocated ? "url" : "path") else {
                        return nil
                    }
                    let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                    text = read
                    return end
                }
                guard let text else { throw reader.missing(relocated ? "url" : "path", codingPath: codingPath) }
                payload = relocated ? .relocated(url: text) : .downloaded(path: text)
                return end
            }
            if reader.is(key, "resumed") {
                var resumedAt: Int64?
                var expectedTotal: Int64?
                let end = try reader.readKeyed(at: value, codingPath: codingPath) { key, value in
                    if reader.is(key, "offset") {
                        let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                        resumedAt = read
                        return end
                    }
                    if reader.is(key, "expectedTotal") {
                        let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                        expectedTotal = read
                        return end
                    }
                    return nil
                }
                guard let resumedAt else { throw reader.missing("offset", codingPath: codingPath) }
                guard let expectedTotal else { throw reader.missing("expectedTotal", codingPath: codingPath) }
                payload = .resumed(offset: resumedAt, expectedTotal: expectedTotal)
                return end
            }
            return nil
        }
        guard let payload else {
            return try reader.readThroughCodable(Self.self, at: offset, codingPath: codingPath)
        }
        return (payload, end)
    }
}

extension ResponseHead: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) {
        buffer.keyed(count: 3)
        buffer.key("status")
        buffer.signed(Int64(status))
        buffer.key("httpVersion")
        buffer.string(httpVersion)
        buffer.key("fieldLines")
        buffer.unkeyed(count: fieldLines.count)
        for field in fieldLines {
            buffer.keyed(count: 2)
            buffer.key("name")
            buffer.string(field.name)
            buffer.key("value")
            buffer.string(field.value)
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
            if reader.is(key, "status") {
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                status = read
                return end
            }
            if reader.is(key, "httpVersion") {
                let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                httpVersion = read
                return end
            }
            if reader.is(key, "fieldLines") {
                var lines: [Field] = []
                let (_, end) = try reader.readUnkeyed(at: value, codingPath: codingPath) { element in
                    var name: String?
                    var fieldValue: String?
                    let end = try reader.readKeyed(at: element, codingPath: codingPath) { key, value in
                        if reader.is(key, "name") {
                            let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                            name = read
                            return end
                        }
                        if reader.is(key, "value") {
                            let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                            fieldValue = read
                            return end
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
            return nil
        }
        guard let status else { throw reader.missing("status", codingPath: codingPath) }
        guard let httpVersion else { throw reader.missing("httpVersion", codingPath: codingPath) }
        guard let fieldLines else { throw reader.missing("fieldLines", codingPath: codingPath) }
        return (Self(status: status, httpVersion: httpVersion, fieldLines: fieldLines), end)
    }
}

extension TransferCompletion: DirectRecord {
    package func writeRecord(to buffer: RecordBuffer) throws {
        let present = [error != nil, digest != nil, finalStatus != nil, peerTrust != nil].filter { $0 }.count
        buffer.keyed(count: 2 + present)
        if let error {
            buffer.key("error")
            try buffer.value(error)
        }
        buffer.key("bytesOnDisk")
        buffer.signed(bytesOnDisk)
        buffer.key("metrics")
        metrics.writeRecord(to: buffer)
        if let digest {
            buffer.key("digest")
            try buffer.value(digest)
        }
        if let finalStatus {
            buffer.key("finalStatus")
            buffer.signed(Int64(finalStatus))
        }
        if let peerTrust {
            buffer.key("peerTrust")
            try buffer.value(peerTrust)
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
            if reader.is(key, "error") {
                guard try !reader.isNull(at: value, codingPath: codingPath) else {
                    return value + 1
                }
                let (read, end) = try reader.readValue(CourierError.self, at: value, codingPath: codingPath)
                completion.error = read
                return end
            }
            if reader.is(key, "bytesOnDisk") {
                let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                bytesOnDisk = read
                return end
            }
            if reader.is(key, "metrics") {
                let (read, end) = try TransferMetrics.readRecord(from: reader, at: value, codingPath: codingPath)
                metrics = read
                return end
            }
            if reader.is(key, "digest") {
                guard try !reader.isNull(at: value, codingPath: codingPath) else {
                    return value + 1
                }
                let (read, end) = try reader.readValue(Checksum.self, at: value, codingPath: codingPath)
                completion.digest = read
                return end
            }
            if reader.is(key, "finalStatus") {
                guard try !reader.isNull(at: value, codingPath: codingPath) else {
                    return value + 1
                }
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                completion.finalStatus = read
                return end
            }
            if reader.is(key, "peerTrust") {
                guard try !reader.isNull(at: value, codingPath: codingPath) else {
                    return value + 1
                }
                let (read, end) = try reader.readValue(PeerTrustReport.self, at: value, codingPath: codingPath)
                completion.peerTrust = read
                return end
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
    /// The keys of the counts, in the order they are written.
    private static let countKeys: [StaticString] = [
        "queuedMicroseconds", "nameLookupMicroseconds", "connectMicroseconds", "tlsMicroseconds",
        "pretransferMicroseconds", "firstByteMicroseconds", "totalMicroseconds", "requestHeaderBytes",
        "responseHeaderBytes", "bodyBytesSent", "bodyBytesReceived", "bodyBytesOnWire",
    ]

    private var counts: [Int64] {
        [
            queuedMicroseconds, nameLookupMicroseconds, connectMicroseconds, tlsMicroseconds,
            pretransferMicroseconds, firstByteMicroseconds, totalMicroseconds, requestHeaderBytes,
            responseHeaderBytes, bodyBytesSent, bodyBytesReceived, bodyBytesOnWire,
        ]
    }

    package func writeRecord(to buffer: RecordBuffer) {
        buffer.keyed(count: Self.countKeys.count + 6)
        for (key, count) in zip(Self.countKeys, counts) {
            buffer.key(key)
            buffer.signed(count)
        }
        buffer.key("httpVersion")
        buffer.signed(Int64(httpVersion))
        buffer.key("reusedConnection")
        buffer.bool(reusedConnection)
        buffer.key("remotePort")
        buffer.signed(Int64(remotePort))
        buffer.key("localPort")
        buffer.signed(Int64(localPort))
        buffer.key("remoteAddress")
        buffer.string(remoteAddress)
        buffer.key("localAddress")
        buffer.string(localAddress)
    }

    package static func readRecord(
        from reader: RecordReader,
        at offset: Int,
        codingPath: [any CodingKey]
    ) throws -> (value: Self, end: Int) {
        var counts = [Int64?](repeating: nil, count: countKeys.count)
        var ports: [Int?] = [nil, nil, nil]
        var addresses: [String?] = [nil, nil]
        var reusedConnection: Bool?
        var next = 0
        let end = try reader.readKeyed(at: offset, codingPath: codingPath) { key, value in
            // The keys come in the order they are written: the next one is looked at first.
            let index =
                next < countKeys.count && reader.is(key, countKeys[next])
                ? next : countKeys.firstIndex { reader.is(key, $0) }
            if let index {
                next = index + 1
                let (read, end) = try reader.readInteger(Int64.self, at: value, codingPath: codingPath)
                counts[index] = read
                return end
            }
            let port: Int? =
                reader.is(key, "httpVersion")
                ? 0 : reader.is(key, "remotePort") ? 1 : reader.is(key, "localPort") ? 2 : nil
            if let port {
                let (read, end) = try reader.readInteger(Int.self, at: value, codingPath: codingPath)
                ports[port] = read
                return end
            }
            let address: Int? = reader.is(key, "remoteAddress") ? 0 : reader.is(key, "localAddress") ? 1 : nil
            if let address {
                let (read, end) = try reader.readString(at: value, codingPath: codingPath)
                addresses[address] = read
                return end
            }
            if reader.is(key, "reusedConnection") {
                let (read, end) = try reader.readBool(at: value, codingPath: codingPath)
                reusedConnection = read
                return end
            }
            return nil
        }
        for (key, count) in zip(countKeys, counts) where count == nil {
            throw reader.missing(key, codingPath: codingPath)
        }
        guard let httpVersion = ports[0] else { throw reader.missing("httpVersion", codingPath: codingPath) }
        guard let reusedConnection else { throw reader.missing("reusedConnection", codingPath: codingPath) }
        guard let remotePort = ports[1] else { throw reader.missing("remotePort", codingPath: codingPath) }
        guard let localPort = ports[2] else { throw reader.missing("localPort", codingPath: codingPath) }
        guard let remoteAddress = addresses[0] else { throw reader.missing("remoteAddress", codingPath: codingPath) }
        guard let localAddress = addresses[1] else { throw reader.missing("localAddress", codingPath: codingPath) }
        var metrics = Self()
        let read = counts.map { $0 ?? 0 }
        metrics.queuedMicroseconds = read[0]
        metrics.nameLookupMicroseconds = read[1]
        metrics.connectMicroseconds = read[2]
        metrics.tlsMicroseconds = read[3]
        metrics.pretransferMicroseconds = read[4]
        metrics.firstByteMicroseconds = read[5]
        metrics.totalMicroseconds = read[6]
        metrics.requestHeaderBytes = read[7]
        metrics.responseHeaderBytes = read[8]
        metrics.bodyBytesSent = read[9]
        metrics.bodyBytesReceived = read[10]
        metrics.bodyBytesOnWire = read[11]
        metrics.httpVersion = httpVersion
        metrics.reusedConnection = reusedConnection
        metrics.remotePort = remotePort
        metrics.localPort = localPort
        metrics.remoteAddress = remoteAddress
        metrics.localAddress = localAddress
        return (metrics, end)
    }
}
