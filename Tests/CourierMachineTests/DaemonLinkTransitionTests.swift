import CourierIPC
import Foundation
import Testing

@testable import Courier

/// ``DaemonLinkMachine`` on a clock that moves only when the test says, with tokens for connections: a background
/// session's opening, adoption, creations, reconnections, replays and acknowledgements, with no courierd.
@Suite("The app's link to courierd: opening, adoption, reconnection, replay")
struct DaemonLinkTransitionTests {
    /// A connection, compared by identity.
    final class Token: Sendable, CustomStringConvertible {
        let description: String

        init(_ name: String) {
            description = name
        }
    }

    typealias Machine = DaemonLinkMachine<Token>

    static let epoch = Date(timeIntervalSinceReferenceDate: 800_000_000)

    /// The actions as words, to compare.
    static func said(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .connect(let starting, let first):
                "connect\(starting ? " starting courierd" : "")\(first ? " (first)" : "")"
            case .wake(let pause): "wake after \(pause)"
            case .watch(let connection): "watch \(connection)"
            case .continueIdentifiers(let next): "identifiers from \(next)"
            case .list(let connection): "list on \(connection)"
            case .adopt(let snapshots): "adopt \(snapshots.map(\.identifier))"
            case .create(let creations, let connection, let generation):
                "create \(creations.map(\.identifier)) on \(connection) #\(generation)"
            case .listen(let connection): "listen to \(connection)"
            case .complete(let tasks, let error): "complete \(tasks.keys.sorted()) with \(error.code)"
            case .finishEvents: "finish events"
            case .close(let connection): "close \(connection)"
            }
        }
    }

    static func creation(_ task: Int) -> IPCMessage.BackgroundTask {
        IPCMessage.BackgroundTask(identifier: task, spec: TransferSpec(url: "http://127.0.0.1/\(task)"))
    }

    static func snapshot(_ task: Int) -> IPCMessage.TaskSnapshot {
        var snapshot = IPCMessage.TaskSnapshot(identifier: task, state: 0)
        snapshot.task = creation(task)
        return snapshot
    }

    static func event(_ sequence: UInt64, task: Int, completes: Bool = false) -> IPCMessage.SequencedEvent {
        let payload: TransferEvent.Payload = completes ? .complete(TransferCompletion(error: nil)) : .data(Data([1]))
        return IPCMessage.SequencedEvent(
            sequence: sequence,
            task: task,
            event: IPCMessage.BackgroundEvent(payload, progress: TransferProgress())
        )
    }

    /// A machine opened on `connection` with nothing to adopt.
    static func opened(_ connection: Token, relaunched: Bool = false) -> Machine {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: relaunched)
        _ = machine.start()
        _ = machine.attemptSucceeded(connection, nextTask: 1, holdsReplay: false, inForeground: true)
        _ = machine.listed(.success([]), on: connection, holdsReplay: false)
        machine.adopted()
        return machine
    }

    // MARK: The first opening

    @Test("Session.init only starts: the first opening connects starting courierd, lists, adopts, then listens")
    func firstOpening() {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: false)
        let first = Token("c1")
        #expect(Self.said(machine.start()) == ["connect starting courierd (first)"])
        #expect(!machine.isSettled)
        #expect(
            Self.said(machine.attemptSucceeded(first, nextTask: 7, holdsReplay: false, inForeground: true))
                == ["identifiers from 7", "watch c1", "list on c1"]
        )
        // Identifiers are courierd's to continue only once its earlier tasks are adopted.
        #expect(!machine.isSettled)
        #expect(
            Self.said(machine.listed(.success([Self.snapshot(3), Self.snapshot(5)]), on: first, holdsReplay: false))
                == ["adopt [3, 5]", "listen to c1"]
        )
        // Settled once the task objects exist: a factory or `allTasks` waiting for it sees them.
        #expect(!machine.isSettled)
        machine.adopted()
        #expect(machine.isSettled)
        #expect(machine.openingFailure == nil)
        // The recreated tasks bind without a creation; a new task is created.
        let bound = [
            machine.bindAdopted(3, hop: 1, sinkPath: nil), machine.bindAdopted(3, hop: 1, sinkPath: nil),
            machine.bindAdopted(8, hop: 1, sinkPath: nil),
        ]
        #expect(bound == [true, false, false])
        guard case .send(let connection, generation: 1) = machine.submit(Self.creation(8), hop: 1, sinkPath: nil,
            now: Self.epoch)
        else {
            Issue.record("a task submitted on an open link is not sent at once")
            return
        }
        #expect(connection === first)
        #expect(machine.hasUnansweredCreations)
        #expect(Self.said(machine.createAnswered(8, .success(()), on: 1, ended: false)) == [])
        #expect(!machine.hasUnansweredCreations)
        #expect(machine.bindings[8]?.journaled == true)
    }

    @Test("a first opening that fails settles with the error, which every submission then gets")
    func firstOpeningFails() {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: false)
        _ = machine.start()
        let refused = CourierError(.backgroundSessionInUse, "held by another process")
        #expect(Self.said(machine.attemptFailed(refused, startedDaemon: true, now: Self.epoch)) == [])
        #expect(machine.isSettled)
        #expect(machine.openingFailure?.code == .backgroundSessionInUse)
        guard case .refused(let error) = machine.submit(Self.creation(1), hop: 1, sinkPath: nil, now: Self.epoch)
        else {
            Issue.record("a submission to a session that never opened was not refused")
            return
        }
        #expect(error.code == .backgroundSessionInUse)
    }

    @Test("a connection that ends during the first opening (courierd restarting just then) is made again, not failed")
    func openingInterrupted() {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: false)
        _ = machine.start()
        let cut = CourierError(.networkConnectionLost, "courierd closed the connection")
        #expect(Self.said(machine.attemptFailed(cut, startedDaemon: true, now: Self.epoch)) == ["wake after 0.02"])
        #expect(!machine.isSettled)
        #expect(machine.openingFailure == nil)
        // Within the grace only connecting; the task submitted meanwhile waits for the connection.
        #expect(Self.said(machine.wake(now: Self.epoch + 0.02)) == ["connect"])
        guard case .queued(let actions) = machine.submit(Self.creation(1), hop: 1, sinkPath: nil, now: Self.epoch)
        else {
            Issue.record("a task submitted during the opening was not kept")
            return
        }
        #expect(actions.isEmpty)
        let connection = Token("c1")
        _ = machine.attemptSucceeded(connection, nextTask: 1, holdsReplay: false, inForeground: true)
        #expect(
            Self.said(machine.listed(.success([]), on: connection, holdsReplay: false))
                == ["adopt []", "create [1] on c1 #1", "listen to c1"]
        )
    }

    @Test("a relaunched app to which courierd replays nothing hears urlSessionDidFinishEvents right after adoption")
    func relaunchWithoutReplay() {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: true)
        let connection = Token("c1")
        _ = machine.start()
        _ = machine.attemptSucceeded(connection, nextTask: 1, holdsReplay: false, inForeground: false)
        #expect(
            Self.said(machine.listed(.success([]), on: connection, holdsReplay: false))
                == ["adopt []", "finish events", "listen to c1"]
        )
        // Owed once: the replay's `finished` batch that might still come owes nothing more.
        let handed = machine.batchHandedOver(finished: true)
        #expect(handed.finishEvents == false)
    }

    @Test("with a replay, urlSessionDidFinishEvents follows its finished batch, once; in the foreground, never")
    func relaunchWithReplay() {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: false)
        let connection = Token("c1")
        _ = machine.start()
        _ = machine.attemptSucceeded(connection, nextTask: 3, holdsReplay: true, inForeground: false)
        #expect(
            Self.said(machine.listed(.success([Self.snapshot(1)]), on: connection, holdsReplay: true))
                == ["adopt [1]", "listen to c1"]
        )
        let adopted = machine.bindAdopted(1, hop: 1, sinkPath: nil)
        #expect(adopted)
        let progressed = machine.accept(Self.event(4, task: 1))
        let first = machine.batchHandedOver(finished: false)
        let completed = machine.accept(Self.event(5, task: 1, completes: true))
        let last = machine.batchHandedOver(finished: true)
        let again = machine.batchHandedOver(finished: true)
        #expect(progressed != nil && completed != nil)
        #expect(first == (4, false))
        #expect(last == (5, true))
        #expect(again == (5, false))

        var foreground = Machine(requestTimeout: 60, startGrace: 1, relaunched: false)
        _ = foreground.start()
        _ = foreground.attemptSucceeded(connection, nextTask: 1, holdsReplay: true, inForeground: true)
        _ = foreground.listed(.success([]), on: connection, holdsReplay: true)
        let handed = foreground.batchHandedOver(finished: true)
        #expect(handed.finishEvents == false)
    }

    // MARK: Events

    @Test("a replayed event delivered before is skipped; a completion unbinds its task; progress is kept")
    func replayedEvents() {
        var machine = Self.opened(Token("c1"))
        guard case .send = machine.submit(Self.creation(1), hop: 1, sinkPath: "/tmp/a", now: Self.epoch) else {
            Issue.record("not sent")
            return
        }
        var progressed = Self.event(1, task: 1)
        progressed.event.progress.received = 512
        let accepted = machine.accept(progressed)
        #expect(accepted?.sinkPath == "/tmp/a")
        #expect(machine.bindings[1]?.progress.received == 512)
        let replayed = machine.accept(Self.event(1, task: 1))
        #expect(replayed == nil)
        machine.placementFailed(1, CourierError(.cannotCreateFile, "no room"))
        let completion = machine.accept(Self.event(2, task: 1, completes: true))
        #expect(completion?.placementFailure?.code == .cannotCreateFile)
        #expect(machine.bindings[1] == nil)
        let afterEnd = machine.accept(Self.event(3, task: 1))
        #expect(afterEnd == nil)
        #expect(machine.lastSequence == 3)
        let handed = machine.batchHandedOver(finished: false)
        #expect(handed.acknowledge == 3)
        // Two batches handed over before the delegate ran either: only the later acknowledgement goes.
        _ = machine.accept(Self.event(4, task: 2))
        let later = machine.batchHandedOver(finished: false)
        #expect(later.acknowledge == 4)
        #expect(!machine.isLatestAcknowledgement(3))
        #expect(machine.isLatestAcknowledgement(4))
    }

    @Test("a creation refused on a live connection completes its task with courierd's error")
    func refusedCreation() {
        var machine = Self.opened(Token("c1"))
        _ = machine.submit(Self.creation(1), hop: 1, sinkPath: nil, now: Self.epoch)
        let refusal = CourierError(.unsupportedInBackgroundSession, "no")
        #expect(Self.said(machine.createAnswered(1, .failure(refusal), on: 1, ended: false))
            == ["complete [1] with unsupportedInBackgroundSession"])
        #expect(!machine.hasUnansweredCreations)
    }

    // MARK: Reconnecting

    @Test("courierd gone: tries at once, 20 ms apart doubling, starts courierd after the grace, gives up at the timeout")
    func reconnectsOnItsSchedule() {
        let first = Token("c1")
        var machine = Self.opened(first)
        _ = machine.submit(Self.creation(1), hop: 1, sinkPath: nil, now: Self.epoch)
        _ = machine.createAnswered(1, .success(()), on: 1, ended: false)
        var now = Self.epoch
        #expect(Self.said(machine.connectionEnded(first, now: now)) == ["connect"])
        // A second report of the same end, or of an older connection, does nothing.
        #expect(Self.said(machine.connectionEnded(first, now: now)) == [])
        let lost = CourierError(.backgroundSessionWasDisconnected, "no answer")
        var connects: [String] = []
        var pauses: [TimeInterval] = []
        while true {
            now += 0.001
            let after = machine.attemptFailed(lost, startedDaemon: connects.last == "connect starting courierd",
                now: now)
            guard case .wake(let pause) = after.first else {
                #expect(Self.said(after) == ["complete [1] with backgroundSessionWasDisconnected"])
                break
            }
            pauses.append(pause)
            now += pause
            let next = Self.said(machine.wake(now: now))
            connects += next
            #expect(next.count == 1)
        }
        #expect(Array(pauses.prefix(6)) == [0.02, 0.04, 0.08, 0.16, 0.32, 0.5])
        #expect(now.timeIntervalSince(Self.epoch) >= 60)
        // courierd was started after the grace, then every grace again while none answered.
        let firstStart = connects.firstIndex(of: "connect starting courierd") ?? -1
        #expect(firstStart > 0)
        #expect(connects.filter { $0 == "connect starting courierd" }.count >= 40)
        guard case .unreachable(let error) = machine.phase else {
            Issue.record("not unreachable after the timeout: \(machine.phase)")
            return
        }
        #expect(error.message.contains("60 s"))
        #expect(machine.isSettled)
        // The next submission tries again, starting courierd at once, and is kept for the connection.
        guard case .queued(let actions) = machine.submit(Self.creation(2), hop: 1, sinkPath: nil, now: now) else {
            Issue.record("a submission while unreachable was not kept")
            return
        }
        #expect(Self.said(actions) == ["connect starting courierd"])
    }

    @Test("reopened: tasks courierd forgot fail, creations it journaled count as answered, the rest go again, in order")
    func reopening() {
        let first = Token("c1")
        let second = Token("c2")
        var machine = Self.opened(first)
        for task in 1...3 {
            _ = machine.submit(Self.creation(task), hop: 1, sinkPath: nil, now: Self.epoch)
        }
        _ = machine.createAnswered(1, .success(()), on: 1, ended: false)
        _ = machine.createAnswered(2, .success(()), on: 1, ended: false)
        // Task 3's answer was lost with the connection; task 4 and 5 are submitted while it reconnects.
        _ = machine.connectionEnded(first, now: Self.epoch)
        #expect(Self.said(machine.createAnswered(3, .failure(CourierError(.networkConnectionLost, "gone")), on: 1,
            ended: true)) == [])
        guard case .queued(let none) = machine.submit(Self.creation(4), hop: 1, sinkPath: nil, now: Self.epoch) else {
            Issue.record("not kept while reconnecting")
            return
        }
        #expect(none.isEmpty)
        _ = machine.submit(Self.creation(5), hop: 1, sinkPath: nil, now: Self.epoch)
        #expect(
            Self.said(machine.attemptSucceeded(second, nextTask: 6, holdsReplay: false, inForeground: true))
                == ["identifiers from 6", "watch c2", "list on c2"]
        )
        // The listing after a reopening adopts nothing again; courierd has 1 and 3 (journaled before the end), not 2.
        #expect(
            Self.said(machine.listed(.success([Self.snapshot(1), Self.snapshot(3)]), on: second, holdsReplay: false))
                == ["complete [2] with unknown", "create [4, 5] on c2 #2", "listen to c2"]
        )
        #expect(machine.bindings[3]?.journaled == true)
        #expect(machine.bindings[4]?.sentOn == 2)
        // A late answer on the old connection changes nothing; the new one's answers count.
        #expect(Self.said(machine.createAnswered(4, .success(()), on: 1, ended: true)) == [])
        #expect(machine.bindings[4]?.journaled == false)
        _ = machine.createAnswered(4, .success(()), on: 2, ended: false)
        _ = machine.createAnswered(5, .success(()), on: 2, ended: false)
        #expect(!machine.hasUnansweredCreations)
        // A listing that failed (the connection ended again) says nothing; the next reopening lists again.
        #expect(Self.said(machine.listed(.failure(CourierError(.networkConnectionLost, "gone")), on: second,
            holdsReplay: false)) == [])
    }

    @Test("a reopening whose connection ends before the listing lists again on the next, and adopts only once")
    func listingLost() {
        var machine = Machine(requestTimeout: 60, startGrace: 1, relaunched: false)
        let first = Token("c1")
        let second = Token("c2")
        _ = machine.start()
        _ = machine.attemptSucceeded(first, nextTask: 4, holdsReplay: false, inForeground: true)
        _ = machine.connectionEnded(first, now: Self.epoch)
        // The listing's failure comes after the end: nothing happens, and factories still wait.
        #expect(Self.said(machine.listed(.failure(CourierError(.networkConnectionLost, "gone")), on: first,
            holdsReplay: false)) == [])
        #expect(!machine.isSettled)
        _ = machine.attemptSucceeded(second, nextTask: 4, holdsReplay: false, inForeground: true)
        #expect(
            Self.said(machine.listed(.success([Self.snapshot(2)]), on: second, holdsReplay: false))
                == ["adopt [2]", "listen to c2"]
        )
        machine.adopted()
        #expect(machine.isSettled)
    }

    @Test("closed: no reconnection, a connection made meanwhile is closed, submissions are refused")
    func closed() {
        let first = Token("c1")
        var machine = Self.opened(first)
        #expect(Self.said(machine.close()) == ["close c1"])
        #expect(Self.said(machine.connectionEnded(first, now: Self.epoch)) == [])
        let late = Token("c2")
        #expect(
            Self.said(machine.attemptSucceeded(late, nextTask: 1, holdsReplay: false, inForeground: true))
                == ["close c2"]
        )
        guard case .refused(let error) = machine.submit(Self.creation(1), hop: 1, sinkPath: nil, now: Self.epoch)
        else {
            Issue.record("a closed session took a task")
            return
        }
        #expect(error.code == .sessionInvalidated)
        #expect(Self.said(machine.needed(now: Self.epoch)) == [])
    }
}
