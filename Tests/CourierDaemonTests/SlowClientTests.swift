import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// An app that stops reading its socket (stopped by its user with Ctrl-Z, or busy) while courierd has events for it:
/// courierd's writes to it never block, its session's transfers go on, other apps are heard, and it catches up from
/// the journal when it reads again (docs/daemon.md, "An app that stops reading").
@Suite("courierd and an app that stops reading", .blockingWaits, .serialized, .timeLimit(.minutes(3)))
struct SlowClientTests {
    static func download(_ identifier: Int, _ url: URL) -> IPCMessage.BackgroundTask {
        IPCMessage.BackgroundTask(identifier: identifier, kind: .download, request: TaskRequest(URLRequest(url: url)))
    }

    @Test("an app that never reads: its 600 downloads all finish, another app's session is heard, and every event reaches it once it reads")
    func stoppedReader() async throws {
        let server = try await TestServer.start()
        // An outbox of 64 KiB: the events of 600 downloads overflow it (and the socket's buffers) many times over.
        let daemon = Daemon(arguments: ["--client-outbox-limit", "65536"])
        defer { daemon.cleanup() }
        try daemon.start()
        let slowSession = "com.example.slow.bg"
        var (slow, opened) = try Client.opening(
            IPCMessage.OpenSession(request: 1, identifier: slowSession),
            on: daemon,
            app: "com.example.slow"
        )
        #expect(opened == .reply(.init(request: 1, result: .sessionOpened(nextTaskIdentifier: 1))))
        var size: Int32 = 4096
        setsockopt(slow.descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        // A courierd that stops reading because its writes to this app block fails the test, it does not hang it.
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(slow.descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        // Created without reading a single answer: the answers and every event wait in courierd's outbox.
        let count = 600
        for task in 1...count {
            let request = TaskRequest(URLRequest(url: server.url("/bytes/1024?seed=\(task)")))
            let created = IPCMessage.BackgroundTask(identifier: task, kind: .download, request: request)
            try slow.send(.createTask(.init(request: UInt64(1_000 + task), session: slowSession, task: created)))
        }

        // The session's runner is not held up by its app: every download finishes while the app reads nothing.
        var looking = try Client.looking(at: daemon.socket)
        let completed = SessionTask.State.completed.rawValue
        let tasks = try looking.tasks(of: slowSession, timeout: 60) { snapshots in
            snapshots.count == count && snapshots.allSatisfy { $0.state == completed }
        }
        #expect(tasks.count == count)
        #expect(tasks.filter { $0.state == completed }.count == count, "\(Dictionary(grouping: tasks, by: \.state).mapValues(\.count))")
        #expect(tasks.allSatisfy { $0.outcome == nil }, "\(tasks.compactMap(\.outcome).prefix(3))")

        // Another app meanwhile: its download and its events, at once.
        var (other, _) = try Client.opening(
            IPCMessage.OpenSession(request: 1, identifier: "com.example.other.bg"),
            on: daemon,
            app: "com.example.other"
        )
        let answer = try other.request {
            .createTask(.init(request: $0, session: "com.example.other.bg", task: Self.download(1, server.url("/bytes/4096?seed=9"))))
        }
        #expect(answer == .reply(.init(request: 101, result: .taskCreated)))
        let otherEvents = try other.events(until: \.event.isCompletion)
        #expect(otherEvents.last?.event.isCompletion == true)
        #expect(otherEvents.contains { $0.event.downloadedPath != nil })

        // The app reads again: every answer, and each task's end (sent again from the journal where the outbox was
        // full), in sequence order, each task's file handed over.
        var answered = Set<UInt64>()
        var ended = Set<Int>()
        var handedOver = Set<Int>()
        var lastSequence: UInt64 = 0
        var outOfOrder = 0
        var largestBatch = 0
        while ended.count < count || answered.count < count, let message = try slow.receive() {
            switch message {
            case .reply(let reply):
                answered.insert(reply.request)
            case .events(let batch):
                largestBatch = max(largestBatch, batch.events.count)
                for event in batch.events where event.sequence > lastSequence {
                    lastSequence = max(lastSequence, event.sequence)
                    if event.event.isCompletion {
                        ended.insert(event.task)
                    }
                    if event.event.downloadedPath != nil {
                        handedOver.insert(event.task)
                    }
                }
                outOfOrder += zip(batch.events, batch.events.dropFirst()).filter { $0.sequence >= $1.sequence }.count
            default:
                Issue.record("unexpected message \(message)")
            }
        }
        #expect(answered.count == count)
        #expect(ended.count == count)
        #expect(handedOver.count == count)
        #expect(outOfOrder == 0)
        // What the app missed (about 1,800 events) came a page at a time, not in one batch read whole from the journal.
        #expect(largestBatch <= BackgroundSessionRunner.catchUpPage)
        slow.close()
        other.close()
        looking.close()
    }
}
