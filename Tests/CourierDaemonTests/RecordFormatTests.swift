import Courier
import Foundation
import Testing

@testable import CourierDaemon

/// The journal's records (`TaskRecord`, `EventRecord`, `SessionRecord` in the record format): every kind courierd
/// writes comes back equal; every earlier form an earlier courierd journaled (as JSON or records) is still read; a
/// later form or a damaged record is a typed error.
@Suite("journal records")
struct RecordFormatTests {
    static var task: IPCMessage.BackgroundTask {
        var spec = TransferSpec(url: "https://example.com/a%20b?q=1#f")
        spec.method = "PUT"
        spec.headers = ["X-B: 2", "X-A: 1", "X-B: 3"]
        spec.body = .file(path: "/tmp/upload \u{1F600}")
        spec.proxy = "http://proxy.example:3128"
        spec.authentication = .digest(user: "u", password: "p")
        spec.segmentMap = [DownloadSegment(start: 0, end: 10, done: 4)]
        spec.priority = -7
        spec.maximumBytesPerSecond = Int64.max
        spec.task = TransferSpec.TaskDetails(
            kind: .upload,
            taskDescription: "",
            priority: 0.25,
            resumeData: Data([0, 1, 2, 255]),
            earliestBeginDate: Date(timeIntervalSinceReferenceDate: 12345.678),
            countOfBytesClientExpectsToSend: -1,
            expectedChecksum: nil,
            maximumSegments: 3
        )
        var task = IPCMessage.BackgroundTask(identifier: 42, spec: spec)
        task.createdInBackground = true
        task.startAfter = Date(timeIntervalSince1970: 1_800_000_000.5)
        return task
    }

    static var events: [IPCMessage.BackgroundEvent] {
        let progress = TransferProgress(received: 10, expectedToReceive: -1, sent: 3, expectedToSend: 3)
        let head = ResponseHead(
            status: 206,
            httpVersion: "HTTP/2",
            fieldLines: [.init(name: "Set-Cookie", value: "a=1"), .init(name: "Set-Cookie", value: "b=2")]
        )
        var error = CourierError(.networkConnectionLost, "cut", curlCode: 56, osError: 104, resumeData: Data([9]))
        error.backgroundTaskCancelledReason = .userForceQuitApplication
        var metrics = TransferMetrics()
        metrics.queuedMicroseconds = 17
        return [
            .init(.response(held: false, resumeOffset: 5, head: head), progress: progress),
            .init(.data(Data(repeating: 7, count: 300)), progress: progress),
            .init(.progress, progress: progress),
            .init(.resumed(offset: 5, expectedTotal: -1), progress: progress),
            .init(.relocated(url: "https://example.com/é"), progress: progress),
            .init(.downloaded(path: "/x"), progress: progress),
            .init(.segments([]), progress: progress),
            .init(.delayedStart, progress: progress),
            .init(.complete(TransferCompletion(error: error, metrics: metrics)), progress: progress),
            .init(.complete(TransferCompletion(error: nil, metrics: TransferMetrics())), progress: progress),
        ]
    }

    @Test("every kind of record comes back equal, and starts with the format's marker")
    func roundTrip() throws {
        let task = Self.task
        let encoded = try Journal.encode(TaskRecord(task))
        #expect(encoded.first == RecordFormat.marker)
        #expect(try Journal.decode(TaskRecord.self, from: encoded).task == task)
        for event in Self.events {
            #expect(try Journal.decode(EventRecord.self, from: try Journal.encode(EventRecord(event))).event == event)
        }
        let checkpoint = TransferCheckpoint(received: 9, expectedToReceive: 100, sent: 0, expectedToSend: -1, boot: "b", at: Date(), entity: nil)
        #expect(try Journal.decode(TransferCheckpoint.self, from: try Journal.encode(checkpoint)) == checkpoint)
        let snapshot = IPCMessage.TaskSnapshot(identifier: 1, taskDescription: nil, state: 1)
        #expect(try Journal.decode(IPCMessage.TaskSnapshot.self, from: try Journal.encode(snapshot)) == snapshot)
        let words = ["courier", "--background", ""]
        #expect(try Journal.decode([String].self, from: try Journal.encode(words)) == words)
        // A session's configuration is kept without the request number of the message that opened it.
        var configuration = Self.configuration
        let record = try Journal.decode(SessionRecord.self, from: try Journal.encode(SessionRecord(configuration)))
        configuration.request = 0
        #expect(record.configuration == configuration)
    }

    static var configuration: IPCMessage.OpenSession {
        IPCMessage.OpenSession(
            request: 7,
            identifier: "com.example.records",
            sendsLaunchEvents: false,
            isDiscretionary: true,
            allowsExpensiveNetworkAccess: false,
            resourceTimeout: 300,
            requestTimeout: 15.5,
            additionalHeaders: ["X-A": "1"],
            maximumConnectionsPerHost: 2,
            trustedCertificatesPEM: Data("PEM".utf8)
        )
    }

    @Test("form 1, the wire type's own encoding an earlier courierd journaled (as JSON or records), is read")
    func formOne() throws {
        let task = Self.task
        for encoded in [try JSONEncoder().encode(task), try RecordEncoder.encode(task)] {
            #expect(try Journal.decode(TaskRecord.self, from: encoded).task == task)
        }
        for event in Self.events {
            for encoded in [try JSONEncoder().encode(event), try RecordEncoder.encode(event)] {
                #expect(try Journal.decode(EventRecord.self, from: encoded).event == event)
            }
        }
        var configuration = Self.configuration
        let encoded = try JSONEncoder().encode(configuration)
        configuration.request = 0
        #expect(try Journal.decode(SessionRecord.self, from: encoded).configuration == configuration)
    }

    @Test("a task and events in the forms journaled before the spec was sent whole and events were the seam's own")
    func earlierForms() throws {
        let task = try Journal.decode(
            TaskRecord.self,
            from: Data(
                #"""
                {"identifier":4,"kind":"upload","request":{"url":"http://127.0.0.1:9/up","method":"PUT",
                "headers":{"X-A":"1"}},"uploadFile":"/tmp/body","taskDescription":"d","priority":0.75,
                "createdInBackground":true}
                """#.utf8
            )
        ).task
        #expect(task.kind == .upload)
        #expect(task.spec.url == "http://127.0.0.1:9/up")
        #expect(task.spec.headers == ["X-A: 1"])
        #expect(task.uploadFile == "/tmp/body")
        #expect(task.priority == 0.75)
        #expect(task.createdInBackground == true)

        let events = try [
            #"{"wroteData":{"delta":5,"total":10,"expected":100}}"#,
            #"{"response":{"_0":{"url":"http://127.0.0.1:9/x","status":200,"headers":{"ETag":"\"1\""}}}}"#,
            #"{"finishedDownloading":{"path":"/tmp/f"}}"#,
            #"{"completed":{"error":{"code":-1001,"message":"slow"}}}"#,
        ].map { try Journal.decode(EventRecord.self, from: Data($0.utf8)).event }
        #expect(events.first == .wrote(10, of: 100))
        #expect(events[1].responseHead?.value("ETag") == "\"1\"")
        #expect(events[2].downloadedPath == "/tmp/f")
        #expect(events[3].endingError??.code == .timedOut)
        // The wire's events have one form: an earlier one is not a message.
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(IPCMessage.BackgroundEvent.self, from: Data(#"{"finishedDownloading":{"path":"/f"}}"#.utf8))
        }
    }

    @Test("a record in a form newer than this courierd's is unreadable, not guessed at")
    func laterForm() throws {
        let later = Data(#"{"v":3,"identifier":1,"spec":{"url":"http://127.0.0.1:9/"}}"#.utf8)
        #expect(throws: JournalError.self) { try Journal.decode(TaskRecord.self, from: later) }
        #expect(throws: JournalError.self) {
            try Journal.decode(EventRecord.self, from: Data(#"{"v":3,"progress":{},"payload":{"progress":{}}}"#.utf8))
        }
        #expect(throws: JournalError.self) {
            try Journal.decode(SessionRecord.self, from: Data(#"{"v":0,"identifier":"s"}"#.utf8))
        }
        // The same in the record format, which the task and event records read themselves.
        struct LaterTask: Encodable {
            var v = 3
            var identifier = 1
            var spec = TransferSpec(url: "http://127.0.0.1:9/")
        }
        struct LaterEvent: Encodable {
            var v = 3
            var progress = TransferProgress()
            var payload = TransferEvent.Payload.resumed(offset: 1, expectedTotal: 2)
        }
        #expect(throws: JournalError.self) { try Journal.decode(TaskRecord.self, from: RecordEncoder.encode(LaterTask())) }
        #expect(throws: JournalError.self) {
            try Journal.decode(EventRecord.self, from: RecordEncoder.encode(LaterEvent()))
        }
        #expect(try Journal.decode(TaskRecord.self, from: RecordEncoder.encode(LaterTask(v: 2))).task.identifier == 1)
        #expect(try Journal.decode(EventRecord.self, from: RecordEncoder.encode(LaterEvent(v: 2))).event.payload
            == .resumed(offset: 1, expectedTotal: 2))
    }

    @Test("events written and read directly: the bytes of their Codable conformance, read back equal either way")
    func directRecords() throws {
        var onDisk = TransferProgress(received: 1 << 40, expectedToReceive: 1 << 40)
        onDisk.bytesOnDisk = 12
        var metrics = TransferMetrics()
        metrics.remoteAddress = "::1"
        metrics.reusedConnection = true
        metrics.bodyBytesOnWire = -1
        let completion = TransferCompletion(
            error: nil,
            bytesOnDisk: 3,
            metrics: metrics,
            digest: Checksum("sha-256=" + String(repeating: "0f", count: 32)),
            finalStatus: 404,
            peerTrust: PeerTrustReport(certificates: [Data([1, 2])], verifyResult: 19)
        )
        let events = Self.events + [
            .init(.complete(completion), progress: onDisk),
            .init(.informational(ResponseHead(status: 104, fieldLines: [])), progress: TransferProgress()),
        ]
        let batch = IPCMessage.Events(
            session: "s",
            events: events.enumerated().map {
                .init(sequence: UInt64($0.offset) + 1, task: -$0.offset, event: $0.element)
            },
            finished: true
        )
        let direct = try RecordEncoder.encode(batch)
        #expect(direct == (try RecordEncoder.encode(batch, direct: false)))
        #expect(try RecordDecoder.decode(IPCMessage.Events.self, from: direct) == batch)
        #expect(try RecordDecoder.decode(IPCMessage.Events.self, from: direct, direct: false) == batch)
        for event in events {
            let encoded = try Journal.encode(EventRecord(event))
            #expect(encoded == (try RecordEncoder.encode(EventRecord(event), direct: false)))
            #expect(try Journal.decode(EventRecord.self, from: encoded).event == event)
        }
        // A task as courierd journals and lists it: every field the rich task sets, a file sink, another sink.
        var listed = IPCMessage.TaskSnapshot(identifier: 3, taskDescription: "d", state: 3, countOfBytesReceived: 5)
        listed.waitingReason = "w"
        listed.task = Self.task
        listed.outcome = CourierError(.cancelled, "c")
        listed.endedAt = Date(timeIntervalSinceReferenceDate: 5.5)
        listed.statusCode = 404
        var fileSpec = TransferSpec(url: "http://127.0.0.1/f")
        fileSpec.sink = .file(path: "/tmp/f.part", append: true)
        fileSpec.task = TransferSpec.TaskDetails(kind: .download, maximumSegments: 4)
        fileSpec.task?.credentialURL = "http://u:p@127.0.0.1/"
        var discardSpec = fileSpec
        discardSpec.sink = .discard
        var snapshots = [listed, IPCMessage.TaskSnapshot(identifier: 1, state: 0)]
        for spec in [fileSpec, discardSpec] {
            var snapshot = IPCMessage.TaskSnapshot(identifier: 2, state: 1)
            snapshot.task = IPCMessage.BackgroundTask(identifier: 2, spec: spec)
            snapshots.append(snapshot)
        }
        let page = try RecordEncoder.encode(snapshots)
        #expect(page == (try RecordEncoder.encode(snapshots, direct: false)))
        #expect(try RecordDecoder.decode([IPCMessage.TaskSnapshot].self, from: page) == snapshots)
        #expect(try RecordDecoder.decode([IPCMessage.TaskSnapshot].self, from: page, direct: false) == snapshots)
        let journaled = try Journal.encode(TaskRecord(Self.task))
        #expect(journaled == (try RecordEncoder.encode(TaskRecord(Self.task), direct: false)))
        // A reader finds its keys by name: in another order, with a key it does not know, as a later courierd may
        // write them.
        let reordered = try RecordEncoder.encode(Reordered(batch: batch))
        #expect(try RecordDecoder.decode(IPCMessage.Events.self, from: reordered) == batch)
        // Damaged: the same error either way, or another value; never a crash.
        let bytes = [UInt8](direct)
        for length in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: DecodingError.self) {
                try RecordDecoder.decode(IPCMessage.Events.self, from: Data(bytes.prefix(length)))
            }
        }
        var generator = SystemRandomNumberGenerator()
        for index in 1..<bytes.count {
            var changed = bytes
            changed[index] = UInt8.random(in: 0...255, using: &generator)
            _ = try? RecordDecoder.decode(IPCMessage.Events.self, from: Data(changed))
        }
    }

    /// A batch written with its keys in reverse order and one more key.
    private struct Reordered: Encodable {
        var batch: IPCMessage.Events

        private enum Keys: String, CodingKey {
            case finished, events, session, later
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(batch.finished, forKey: .finished)
            try container.encode(["unknown": [1, 2, 3]], forKey: .later)
            try container.encode(batch.events, forKey: .events)
            try container.encode(batch.session, forKey: .session)
        }
    }

    @Test("a damaged record, cut or with any byte changed, is a typed error or another value, never a crash")
    func damaged() throws {
        let encoded = [UInt8](try Journal.encode(TaskRecord(Self.task)))
        for length in 0..<encoded.count {
            #expect(throws: JournalError.self) {
                try Journal.decode(TaskRecord.self, from: Data(encoded.prefix(length)))
            }
        }
        var generator = SystemRandomNumberGenerator()
        for index in 1..<encoded.count {
            for _ in 0..<4 {
                var changed = encoded
                changed[index] = UInt8.random(in: 0...255, using: &generator)
                _ = try? Journal.decode(TaskRecord.self, from: Data(changed))
            }
        }
        // Containers nested past any record's depth.
        var deep: [UInt8] = [RecordFormat.marker]
        for _ in 0..<10_000 {
            deep += [RecordFormat.Tag.unkeyed.rawValue, 1, 0, 0, 0]
        }
        #expect(throws: JournalError.self) {
            try Journal.decode([[String]].self, from: Data(deep))
        }
    }
}
