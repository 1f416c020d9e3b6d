import CourierConcurrency
import CourierTestSupport
import Dispatch
import Foundation
import Testing

@testable import CourierDaemon

#if canImport(Glibc)
import Glibc
#endif

/// A connection's outbox after `close()`: its descriptor is closed and its number reused by the next socket, so
/// nothing queued by another thread at that moment may be written, or watched for room, afterwards.
///
/// Its tests block while they wait, and its senders spin: both on threads of their own (`.blockingWaits`,
/// ``TestThread``), never on Dispatch's global threads, which are Swift concurrency's cooperative pool here. Two senders
/// spinning there for 200 rounds held both of the pool's threads of a two-core machine for tens of seconds, and other
/// suites' async body sequences, which need the pool, stalled past their idle timeout in CI.
@Suite("connection outbox", .blockingWaits)
struct ConnectionOutboxTests {
    @Test("frames queued while the outbox closes never reach the socket that reuses its descriptor")
    func nothingAfterClose() throws {
        let frame = Data(repeating: 0x5A, count: 512)
        for round in 0..<200 {
            let (old, oldPeer) = try Self.socketPair()
            let outbox = ConnectionOutbox(descriptor: old, limit: 1 << 30, durability: {}, caughtUp: {})
            let senders = 2
            let started = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for sender in 0..<senders {
                done.enter()
                try TestThread.start(name: "outbox-send-\(sender)") {
                    started.signal()
                    while outbox.send(frame) {}
                    done.leave()
                }
            }
            for _ in 0..<senders {
                started.wait()
            }
            outbox.close()
            close(old)
            // The lowest free number: `old`'s, unless another test took it meanwhile.
            let (reused, reusedPeer) = try Self.socketPair()
            done.wait()
            // Long enough for a flush queued by a sender that passed the outbox's check before it closed.
            usleep(2_000)
            var byte: UInt8 = 0
            let read = recv(reusedPeer, &byte, 1, Int32(MSG_DONTWAIT))
            let readErrno = errno
            close(reused)
            close(reusedPeer)
            close(oldPeer)
            #expect(
                read < 0 && (readErrno == EAGAIN || readErrno == EWOULDBLOCK),
                "round \(round): the closed outbox wrote to descriptor \(reused) (was \(old))"
            )
            if read >= 0 {
                return
            }
        }
    }

    @Test(
        "afterWritten calls once what was queued is in the socket or the socket is full, at once while it stays full"
    )
    func afterWritten() throws {
        let (end, peer) = try Self.socketPair()
        defer {
            close(end)
            close(peer)
        }
        let outbox = ConnectionOutbox(descriptor: end, limit: 1 << 30, durability: {}, caughtUp: {})
        let calls = WaitableValue<[String]>([])
        // Nothing queued: at once.
        outbox.afterWritten { calls.withLock { $0.append("empty") } }
        #expect(calls.withLock { $0 } == ["empty"])
        // More than the socket holds, and a peer that reads nothing (a stopped app): called once the socket is full,
        // with the peer's unread bytes in it.
        let frame = Data(repeating: 7, count: 4 << 20)
        #expect(outbox.send(frame))
        outbox.afterWritten {
            var unread: Int32 = 0
            _ = ioctl(peer, UInt(FIONREAD), &unread)
            calls.withLock { $0.append(unread > 0 ? "full" : "full, but nothing unread") }
        }
        #expect(calls.wait(atMost: 30) { $0.count > 1 })
        #expect(calls.withLock { $0 } == ["empty", "full"])
        // Asked again while the socket stays full (a stopped app makes no room): at once, not at the next write.
        outbox.afterWritten { calls.withLock { $0.append("still full") } }
        #expect(calls.withLock { $0 } == ["empty", "full", "still full"])
        // The peer reads it all: the rest is written, and a call asked for then comes once it is.
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var read = 0
        while read < frame.count {
            let count = recv(peer, &buffer, buffer.count, 0)
            try #require(count > 0)
            read += count
        }
        outbox.afterWritten { calls.withLock { $0.append("written") } }
        #expect(calls.wait(atMost: 30) { $0 == ["empty", "full", "still full", "written"] })
        outbox.close()
    }

    @Test("a call waiting for a write is never made once the outbox closes, even by a write already under way")
    func afterWrittenNeverAfterClose() throws {
        let (end, peer) = try Self.socketPair()
        defer {
            close(end)
            close(peer)
        }
        // The journal flush before the write waits for the test: the frame is queued and not written.
        let journalFlushed = DispatchSemaphore(value: 0)
        let outbox = ConnectionOutbox(
            descriptor: end,
            limit: 1 << 30,
            durability: { journalFlushed.wait() },
            caughtUp: {}
        )
        let calls = WaitableValue<[String]>([])
        #expect(outbox.send(Data(repeating: 7, count: 4 << 20)))
        outbox.afterWritten { calls.withLock { $0.append("called") } }
        let closed = DispatchSemaphore(value: 0)
        try TestThread.start(name: "outbox-close") {
            outbox.close()
            closed.signal()
        }
        while outbox.isOpen {
            usleep(1_000)
        }
        // The flush under way (or, if it had not begun, close's own) goes on now, writes until the socket is full, and
        // finds nobody waiting.
        journalFlushed.signal()
        closed.wait()
        #expect(calls.withLock { $0 }.isEmpty)
    }

    private static func socketPair() throws -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return (ends[0], ends[1])
    }
}
