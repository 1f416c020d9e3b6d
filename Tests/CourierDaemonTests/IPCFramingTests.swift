import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One message of every kind, as the daemon and the library exchange them.
enum SampleMessages {
    static var all: [IPCMessage] {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/episode/42")!)
        request.httpMethod = "PUT"
        request.setValue("audio/mpeg", forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 30
        let snapshot = IPCMessage.TaskSnapshot(
            identifier: 3,
            taskDescription: "episode-42",
            state: SessionTask.State.running.rawValue,
            countOfBytesReceived: 10,
            countOfBytesExpectedToReceive: 100,
            waitingReason: "waiting for an unmetered network"
        )
        return [
            .hello(.init(app: "com.example.podcasts", pid: 4242, launchCommand: ["/usr/bin/podcasts", "-b"])),
            .welcome(.init(daemonVersion: "1.0")),
            .openSession(.init(request: 1, identifier: "com.example.podcasts.bg", isDiscretionary: true)),
            .openSession(.init(request: 1, identifier: "com.example.podcasts.bg", maximumConnectionsPerHost: 32)),
            .createTask(
                .init(
                    request: 2,
                    session: "com.example.podcasts.bg",
                    task: .init(
                        identifier: 3,
                        kind: .upload,
                        request: TaskRequest(request),
                        uploadFile: "/tmp/x",
                        resumeData: Data([1, 2]),
                        taskDescription: "episode-42"
                    )
                )
            ),
            .command(.init(request: 3, session: "s", task: 3, verb: .cancelProducingResumeData)),
            .listTasks(.init(request: 4, session: "s")),
            .acknowledge(.init(session: "s", through: 17)),
            .closeSession(.init(request: 5, session: "s", cancelTasks: true)),
            .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 4))),
            .reply(.init(request: 2, result: .taskCreated)),
            .reply(.init(request: 3, result: .done)),
            .reply(.init(request: 4, result: .tasks(snapshots: [snapshot]))),
            .listSessions(.init(request: 7)),
            .stopDaemon(.init(request: 8)),
            .forceQuit(.init(request: 9, app: "a")),
            .appState(.init(inForeground: false)),
            .appState(.init(inForeground: false, suspended: true)),
            .reply(
                .init(
                    request: 7,
                    result: .sessions([.init(identifier: "s", app: "a", connected: true, activeTasks: 2, pendingEvents: 3)])
                )
            ),
            .failure(.init(request: 6, error: CourierError(.backgroundSessionInUse, "in use"))),
            .failure(.init(request: nil, error: CourierError(.unknown, "bad frame"))),
            .events(
                .init(
                    session: "s",
                    events: [
                        .init(sequence: 1, task: 3, event: .wrote(10, of: 100)),
                        .init(
                            sequence: 2,
                            task: 3,
                            event: .init(.progress, progress: TransferProgress(sent: 5, expectedToSend: 5))
                        ),
                        .init(
                            sequence: 3,
                            task: 3,
                            event: .init(
                                .resumed(offset: 10, expectedTotal: 100),
                                progress: TransferProgress(received: 10, expectedToReceive: 100)
                            )
                        ),
                        .init(sequence: 4, task: 3, event: .downloaded("/tmp/f")),
                        .init(sequence: 5, task: 3, event: .init(.relocated(url: "http://127.0.0.1/x"), progress: .init())),
                        .init(
                            sequence: 6,
                            task: 3,
                            event: .init(
                                .response(
                                    held: false,
                                    resumeOffset: 0,
                                    head: ResponseHead(status: 200, fieldLines: [.init(name: "ETag", value: "\"1\"")])
                                ),
                                progress: .init()
                            )
                        ),
                        .init(sequence: 7, task: 3, event: .init(.data(Data("{}".utf8)), progress: .init())),
                        .init(sequence: 8, task: 3, event: .completed(nil)),
                        .init(sequence: 9, task: 4, event: .completed(CourierError(.timedOut, "slow"))),
                    ],
                    finished: true
                )
            ),
            .registerApp(.init(request: 7, fetchInterval: 0, remoteNotifications: true)),
            .reply(.init(request: 7, result: .registered(deviceToken: String(repeating: "ab", count: 32)))),
            .wake(.init(wake: 1, reason: .fetch)),
            .wake(.init(wake: 2, reason: .remoteNotification(payload: Data(#"{"aps":{}}"#.utf8), pushes: 3))),
            .wakeCompleted(.init(wake: 2, work: .remoteNotification, result: "newData", duration: 0.5, bytes: 10)),
            .wakeCompleted(.init(wake: nil, work: .fetch, result: nil, duration: 30, bytes: 0)),
            .sendPush(.init(request: 8, deviceToken: "00", payload: Data("{}".utf8), pushType: "background", priority: 5)),
            .reply(.init(request: 8, result: .push(.init(status: 400, reason: "BadDeviceToken", detail: "no app")))),
            .listApps(.init(request: 9)),
            .reply(
                .init(
                    request: 9,
                    result: .apps([
                        .init(
                            app: "a", running: true, deviceToken: nil, fetchInterval: 0, effectiveInterval: 900,
                            nextFetch: Date(timeIntervalSince1970: 1_000), nextFetchReason: "every 15 min",
                            lastFetches: [.init(at: Date(timeIntervalSince1970: 10), duration: 1, bytes: 2, outcome: "noData")]
                        )
                    ])
                )
            ),
            .triggerFetch(.init(request: 10, app: "a", launch: true)),
        ]
    }

    /// Every sample, framed in `version`.
    static func stream(version: UInt16 = IPCFrame.jsonVersion) -> Data {
        var bytes = Data()
        for message in all {
            bytes.append(try! message.frame(version: version).encoded)
        }
        return bytes
    }
}

@Suite("IPC framing")
struct IPCFramingTests {
    func decodeAll(_ bytes: Data, pieces: Int) throws(IPCError) -> [IPCMessage] {
        var decoder = IPCFrameDecoder()
        var messages: [IPCMessage] = []
        let size = max(1, bytes.count / pieces)
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let end = min(offset + size, bytes.endIndex)
            for frame in try decoder.feed(bytes[offset..<end]) {
                messages.append(try IPCMessage(frame: frame))
            }
            offset = end
        }
        try decoder.finish()
        return messages
    }

    @Test(
        "every message kind survives its frame in both versions, whole or cut in pieces of any size",
        arguments: [IPCFrame.jsonVersion, IPCFrame.recordVersion], [1, 3, 50, 10_000]
    )
    func roundTrip(version: UInt16, pieces: Int) throws {
        let messages = try decodeAll(SampleMessages.stream(version: version), pieces: pieces)
        #expect(messages == SampleMessages.all)
        #expect(Set(messages.map(\.kind)) == Set(IPCMessage.Kind.allCases))
    }

    @Test("one byte at a time, both versions interleaved (each frame is read by the version it says)")
    func byteByByte() throws {
        var stream = Data()
        for (index, message) in SampleMessages.all.enumerated() {
            stream.append(try message.frame(version: index.isMultiple(of: 2) ? 1 : 2).encoded)
        }
        #expect(try decodeAll(stream, pieces: stream.count) == SampleMessages.all)
    }

    @Test("version 2 carries the record format: smaller than JSON, and JSON in a version 2 frame is malformed")
    func recordVersion() throws {
        #expect(SampleMessages.stream(version: 2).count < SampleMessages.stream(version: 1).count)
        let json = try IPCMessage.acknowledge(.init(session: "s", through: 1)).frame(version: 1)
        let mislabelled = IPCFrame(version: 2, type: json.type, payload: json.payload)
        #expect {
            _ = try IPCMessage(frame: mislabelled)
        } throws: { error in
            guard case IPCError.malformedPayload(type: 7, let reason) = error else {
                return false
            }
            return reason.contains("not a record")
        }
    }

    @Test("events too many for one frame (a replay, a catch-up) go in several, in order, finished on the last")
    func eventsOverSeveralFrames() throws {
        let path = "/state/courier/downloads/" + String(repeating: "d", count: 120)
        let events = (1...60_000).map { index in
            IPCMessage.SequencedEvent(
                sequence: UInt64(index),
                task: index,
                event: IPCMessage.BackgroundEvent(.downloaded(path: path), progress: TransferProgress(received: 1024))
            )
        }
        for version in [IPCFrame.jsonVersion, IPCFrame.recordVersion] {
            let batch = IPCMessage.Events(session: "s", events: events, finished: true)
            #expect(throws: IPCError.self) { try IPCMessage.events(batch).frame(version: version) }
            let frames = try IPCMessage.frames(of: batch, version: version)
            #expect(frames.count > 1)
            #expect(frames.allSatisfy { $0.payload.count <= IPCFrame.maximumPayloadLength })
            var decoder = IPCFrameDecoder()
            let parts = try decoder.feed(frames.reduce(Data()) { $0 + $1.encoded }).map { frame in
                guard case .events(let part) = try IPCMessage(frame: frame) else {
                    throw IPCError.unknownType(frame.type)
                }
                return part
            }
            #expect(parts.flatMap(\.events) == events)
            #expect(parts.map(\.finished) == Array(repeating: false, count: parts.count - 1) + [true])
            // A batch that fits is one frame.
            let small = IPCMessage.Events(session: "s", events: Array(events.prefix(10)), finished: false)
            #expect(try IPCMessage.frames(of: small, version: version).count == 1)
        }
    }

    @Test("the header is big-endian length, version, type")
    func header() throws {
        let frame = try IPCMessage.acknowledge(.init(session: "s", through: 1)).frame()
        let bytes = [UInt8](frame.encoded)
        let length = frame.payload.count
        #expect(bytes[0..<8] == [0, 0, UInt8(length >> 8), UInt8(length & 0xFF), 0, 1, 0, 7])
        #expect(String(decoding: frame.payload, as: UTF8.self) == #"{"session":"s","through":1}"#)
    }

    @Test("an oversized frame is refused from its header, before its payload arrives")
    func oversized() {
        var decoder = IPCFrameDecoder(maximumPayloadLength: 100)
        let header = Data([0, 0, 0, 101, 0, 1, 0, 1])
        #expect(throws: IPCError.oversized(length: 101, limit: 100)) { try decoder.feed(header) }
        // Spent: the same error again, whatever comes next.
        #expect(throws: IPCError.oversized(length: 101, limit: 100)) { try decoder.feed(Data([1])) }
        #expect(throws: IPCError.oversized(length: 101, limit: 100)) { try decoder.finish() }
    }

    @Test("another version and an unknown type are refused from the header")
    func versionAndType() {
        var decoder = IPCFrameDecoder()
        #expect(throws: IPCError.unsupportedVersion(3)) { try decoder.feed(Data([0, 0, 0, 2, 0, 3, 0, 1])) }
        var second = IPCFrameDecoder()
        #expect(throws: IPCError.unknownType(99)) { try second.feed(Data([0, 0, 0, 2, 0, 1, 0, 99])) }
    }

    @Test("a connection that ends inside a frame is truncated; between frames it is fine")
    func truncated() throws {
        let frame = try IPCMessage.listTasks(.init(request: 1, session: "s")).frame().encoded
        var decoder = IPCFrameDecoder()
        #expect(try decoder.feed(frame + frame.prefix(3)).count == 1)
        #expect(throws: IPCError.truncated(bufferedBytes: 3)) { try decoder.finish() }
        var clean = IPCFrameDecoder()
        #expect(try clean.feed(frame).count == 1)
        try clean.finish()
        #expect(clean.bufferedByteCount == 0)
    }

    @Test("a payload that is not its type's body is malformed, with the reason")
    func malformed() throws {
        let wrongBody = IPCFrame(type: IPCMessage.Kind.acknowledge.rawValue, payload: Data(#"{"session":1}"#.utf8))
        do {
            _ = try IPCMessage(frame: wrongBody)
            Issue.record("decoded a malformed body")
        } catch {
            guard case .malformedPayload(let type, let reason) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(type == 7)
            #expect(reason.contains("session"))
        }
    }

    @Test("a task in the form of an app built before the spec was sent whole still decodes")
    func earlierForms() throws {
        let task = try JSONDecoder().decode(
            IPCMessage.BackgroundTask.self,
            from: Data(
                #"""
                {"identifier":4,"kind":"upload","request":{"url":"http://127.0.0.1:9/up","method":"PUT",
                "headers":{"X-A":"1"}},"uploadFile":"/tmp/body","taskDescription":"d","priority":0.75,
                "createdInBackground":true}
                """#.utf8
            )
        )
        #expect(task.kind == .upload)
        #expect(task.spec.url == "http://127.0.0.1:9/up")
        #expect(task.spec.method == "PUT")
        #expect(task.spec.headers == ["X-A: 1"])
        #expect(task.uploadFile == "/tmp/body")
        #expect(task.taskDescription == "d")
        #expect(task.priority == 0.75)
        #expect(task.createdInBackground == true)
        // The new form round-trips as it is.
        let again = try JSONDecoder().decode(IPCMessage.BackgroundTask.self, from: try JSONEncoder().encode(task))
        #expect(again == task)
    }
}
