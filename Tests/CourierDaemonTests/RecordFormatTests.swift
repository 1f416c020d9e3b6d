import Courier
import Foundation
import Testing

@testable import CourierDaemon

/// The journal's record format (`RecordEncoder`, `RecordDecoder`): every kind of record courierd writes comes back
/// equal; records written as JSON by an earlier courierd are still read; a damaged record is a typed error.
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
        let encoded = try Journal.encode(task)
        #expect(encoded.first == RecordFormat.marker)
        #expect(try Journal.decode(IPCMessage.BackgroundTask.self, from: encoded) == task)
        for event in Self.events {
            #expect(try Journal.decode(IPCMessage.BackgroundEvent.self, from: try Journal.encode(event)) == event)
        }
        let checkpoint = TransferCheckpoint(received: 9, expectedToReceive: 100, sent: 0, expectedToSend: -1, boot: "b", at: Date(), entity: nil)
        #expect(try Journal.decode(TransferCheckpoint.self, from: try Journal.encode(checkpoint)) == checkpoint)
        let snapshot = IPCMessage.TaskSnapshot(identifier: 1, taskDescription: nil, state: 1)
        #expect(try Journal.decode(IPCMessage.TaskSnapshot.self, from: try Journal.encode(snapshot)) == snapshot)
        let words = ["courier", "--background", ""]
        #expect(try Journal.decode([String].self, from: try Journal.encode(words)) == words)
    }

    @Test("a record an earlier courierd wrote as JSON is read")
    func earlierJSON() throws {
        let task = Self.task
        let json = try JSONEncoder().encode(task)
        #expect(try Journal.decode(IPCMessage.BackgroundTask.self, from: json) == task)
        let event = Self.events[8]
        #expect(try Journal.decode(IPCMessage.BackgroundEvent.self, from: try JSONEncoder().encode(event)) == event)
    }

    @Test("a damaged record, cut or with any byte changed, is a typed error or another value, never a crash")
    func damaged() throws {
        let encoded = [UInt8](try Journal.encode(Self.task))
        for length in 0..<encoded.count {
            #expect(throws: JournalError.self) {
                try Journal.decode(IPCMessage.BackgroundTask.self, from: Data(encoded.prefix(length)))
            }
        }
        var generator = SystemRandomNumberGenerator()
        for index in 1..<encoded.count {
            for _ in 0..<4 {
                var changed = encoded
                changed[index] = UInt8.random(in: 0...255, using: &generator)
                _ = try? Journal.decode(IPCMessage.BackgroundTask.self, from: Data(changed))
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
