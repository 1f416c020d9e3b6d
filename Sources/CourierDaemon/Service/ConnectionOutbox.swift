import CourierConcurrency
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What courierd has to write to one connection: frames queued by any thread without blocking it, written on the
/// connection's own queue as the socket takes them.
///
/// A frame is written only after one flush of the journal made after it was queued (`durability`, a group commit):
/// nothing an app is told — a task exists, an event happened — can be undone by a power cut. The flush and the writes
/// happen on `queue`, never under a lock of the thread that queued the frame, so an app that stops reading (stopped
/// with Ctrl-Z, or busy) holds up nothing but its own outbox. When the socket is full a write source wakes the queue
/// once it has room again; nothing polls.
///
/// The outbox is bounded for events (``offer(_:)``): past `limit` bytes queued they are refused (`.withheld`), and the
/// outbox remembers it; they are in the journal, and once everything queued has been written `caughtUp` is called, on
/// `queue`, for the connection's sessions to send them again from there. Answers to requests (``send(_:)``) are always
/// queued: an app has few requests in flight.
///
/// `@unchecked Sendable`: what any thread touches is in `state`, a lock; `pending`, `pendingOffset`, `source` and
/// `sourceRunning` are touched only on `queue`.
final class ConnectionOutbox: @unchecked Sendable {
    /// What became of an offered frame.
    enum Offer: Sendable {
        case queued
        /// Not queued: the outbox is over its bound. ``caughtUp`` follows when it has drained.
        case withheld
        /// The connection is closed or failed.
        case closed
    }

    /// Bytes of events a connection's outbox holds before it withholds more (4 MiB, about 10,000 events).
    static let defaultLimit = 4 << 20

    private struct State {
        /// Frames queued since the journal was last flushed for this outbox, in order.
        var unsynced: [Data] = []
        /// Bytes queued and not yet written.
        var bytes = 0
        /// A flush is scheduled on `queue`, running, or waiting for room in the socket.
        var flushing = false
        /// An event was withheld since the outbox last drained.
        var withheld = false
        var closed = false
        /// Bytes queued and written since the outbox opened.
        var queuedTotal = 0
        var writtenTotal = 0
        /// ``afterWritten(_:)``'s calls waiting, each for `writtenTotal` to reach its count (or the socket to be full),
        /// in order.
        var waitingForWrites: [(through: Int, call: @Sendable () -> Void)] = []
        /// The last write found the socket full, and nothing was written since: its peer has that much unread.
        var socketFull = false
    }

    private let descriptor: Int32
    private let limit: Int
    private let durability: @Sendable () -> Void
    private let caughtUp: @Sendable () -> Void
    private let state = LockedValue(State())
    private let queue: DispatchQueue
    /// The bytes of the frames flushed to the journal and not yet written, in order; the first `pendingOffset` are out.
    /// One buffer, so that a batch goes in one `send`.
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var source: (any DispatchSourceWrite)?
    private var sourceRunning = false

    init(
        descriptor: Int32,
        limit: Int,
        durability: @escaping @Sendable () -> Void,
        caughtUp: @escaping @Sendable () -> Void
    ) {
        self.descriptor = descriptor
        self.limit = limit
        self.durability = durability
        self.caughtUp = caughtUp
        queue = DispatchQueue(label: "courierd.connection.\(descriptor)")
    }

    /// Whether frames may still be queued and written: ``close()`` was not called and the peer did not fail.
    var isOpen: Bool {
        state.withLock { !$0.closed }
    }

    /// Calls `call` once everything queued so far is in the socket, or the socket is full (its peer has that much
    /// unread): at once when it is written or the last write found the socket full, else on the outbox's queue after
    /// the write that puts the last of it there or finds the socket full; never when the outbox closes first.
    func afterWritten(_ call: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard !state.closed else {
                return false
            }
            // Full: a stopped peer makes no room, so waiting for the next write could be forever.
            guard state.writtenTotal < state.queuedTotal, !state.socketFull else {
                return true
            }
            state.waitingForWrites.append((state.queuedTotal, call))
            return false
        }
        if now {
            call()
        }
    }

    /// Queues `frame` (an answer); false when the connection is closed.
    func send(_ frame: Data) -> Bool {
        enqueue([frame], bounded: false) != .closed
    }

    /// Queues `frames` (one batch of events, in one frame or several) unless the outbox is over its bound: then
    /// `.withheld`, and ``caughtUp`` is called once what is queued has been written.
    func offer(_ frames: [Data]) -> Offer {
        enqueue(frames, bounded: true)
    }

    private func enqueue(_ frames: [Data], bounded: Bool) -> Offer {
        let size = frames.reduce(0) { $0 + $1.count }
        let (offer, schedule) = state.withLock { state -> (Offer, Bool) in
            guard !state.closed else {
                return (.closed, false)
            }
            // One batch over the bound is taken when the outbox is empty: a replay larger than the bound goes whole.
            if bounded, state.withheld || (state.bytes > 0 && state.bytes + size > limit) {
                state.withheld = true
                return (.withheld, false)
            }
            state.unsynced += frames
            state.bytes += size
            state.queuedTotal += size
            defer { state.flushing = true }
            return (.queued, !state.flushing)
        }
        if schedule {
            queue.async { self.flush() }
        }
        return offer
    }

    /// Writes what is queued (after one journal flush for the frames queued since the last), until the socket is full
    /// (the write source calls again when it has room) or nothing is left.
    ///
    /// Nothing once the outbox is closed: a sender that found it open may schedule a flush after ``close()`` ran on
    /// `queue`, when the descriptor may be closed and its number another connection's. ``close()`` writes what the
    /// socket takes itself.
    private func flush() {
        guard !state.withLock({ $0.closed }) else {
            waitForRoom(false)
            return
        }
        while true {
            takeUnsynced()
            switch writeQueued() {
            case .full:
                waitForRoom(true)
                return
            case .failed:
                waitForRoom(false)
                return
            case .done:
                waitForRoom(false)
            }
            let (again, caught) = state.withLock { state -> (Bool, Bool) in
                guard state.unsynced.isEmpty else {
                    return (true, false)
                }
                state.flushing = false
                let caught = state.withheld && !state.closed
                state.withheld = false
                return (false, caught)
            }
            if again {
                continue
            }
            if caught {
                caughtUp()
            }
            return
        }
    }

    /// Moves the frames queued since the last journal flush behind one flush (on `queue`): they may be written now.
    private func takeUnsynced() {
        let taken = state.withLock { state in
            defer { state.unsynced = [] }
            return state.unsynced
        }
        if !taken.isEmpty {
            durability()
            for frame in taken {
                pending.append(contentsOf: frame)
            }
        }
    }

    private enum WriteOutcome {
        case done, full, failed
    }

    /// Writes `pending` without blocking.
    private func writeQueued() -> WriteOutcome {
        while pendingOffset < pending.count {
            let count = pending.withUnsafeBytes { buffer in
                Glibc.send(
                    descriptor,
                    buffer.baseAddress! + pendingOffset,
                    buffer.count - pendingOffset,
                    Int32(MSG_NOSIGNAL | MSG_DONTWAIT)
                )
            }
            if count < 0 {
                switch errno {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    // What is out goes; what is left waits for room.
                    pending.removeFirst(pendingOffset)
                    pendingOffset = 0
                    // The socket is full of what the peer has not read: those waiting for it to have something go
                    // now (a stopped peer would never make room for the rest).
                    let waiting = state.withLock { state in
                        state.socketFull = true
                        defer { state.waitingForWrites = [] }
                        return state.waitingForWrites.map(\.call)
                    }
                    waiting.forEach { $0() }
                    return .full
                default:
                    // The peer is gone: its reader ends the connection (the shutdown wakes it if it waits).
                    state.withLock { state in
                        state.closed = true
                        state.flushing = false
                        state.waitingForWrites = []
                    }
                    pending = []
                    pendingOffset = 0
                    shutdown(descriptor, Int32(SHUT_RDWR))
                    return .failed
                }
            }
            pendingOffset += count
            let written = state.withLock { state -> [@Sendable () -> Void] in
                state.bytes -= count
                state.writtenTotal += count
                state.socketFull = false
                let ready = state.waitingForWrites.prefix { $0.through <= state.writtenTotal }
                state.waitingForWrites.removeFirst(ready.count)
                return ready.map(\.call)
            }
            written.forEach { $0() }
        }
        pending.removeAll(keepingCapacity: pending.count <= 64 << 10)
        pendingOffset = 0
        return .done
    }

    /// Whether the write source wakes the queue when the socket has room.
    private func waitForRoom(_ waiting: Bool) {
        guard waiting != sourceRunning else {
            return
        }
        if waiting, source == nil {
            let made = DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: queue)
            made.setEventHandler { [unowned self] in self.flush() }
            source = made
            made.activate()
        } else if waiting {
            source?.resume()
        } else {
            source?.suspend()
        }
        sourceRunning = waiting
    }

    /// Ends the outbox before the descriptor closes: what the socket takes now is written (a failure answering a bad
    /// frame), the rest is dropped, and the write source is gone once this returns. A second call does nothing.
    func close() {
        state.withLock { state in
            state.closed = true
            state.waitingForWrites = []
        }
        let cancelled = DispatchSemaphore(value: 0)
        let hasSource = queue.sync { () -> Bool in
            takeUnsynced()
            _ = writeQueued()
            pending = []
            pendingOffset = 0
            guard let source else {
                return false
            }
            source.setCancelHandler { cancelled.signal() }
            if !sourceRunning {
                source.resume()
            }
            source.cancel()
            self.source = nil
            sourceRunning = false
            return true
        }
        if hasSource {
            cancelled.wait()
        }
    }
}
