import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A data delegate that handles `bytesPerSecond` at most (sleeping in `didReceive` for what it was handed), counting
/// the bytes; nil: as fast as they come.
private final class SlowDataDelegate: SessionDataDelegate, Sendable {
    let bytesPerSecond: Int?
    private let received = LockedValue(0)

    init(bytesPerSecond: Int?) {
        self.bytesPerSecond = bytesPerSecond
    }

    var bytesReceived: Int {
        received.withLock { $0 }
    }

    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        received.withLock { $0 += data.count }
        if let bytesPerSecond {
            Thread.sleep(forTimeInterval: Double(data.count) / Double(bytesPerSecond))
        }
    }
}

/// Consumers slower than the network, and consumers that give up: what leaves the server is the measure (an endless
/// body from ``EndlessBodyServer``), so memory held by Courier is what the server wrote less what was consumed.
@Suite("Slow consumers and cancellation", .timeLimit(.minutes(1)))
struct SlowConsumerTests {
    /// The kernel's socket buffers on loopback (both ends, autotuned) plus Courier's window: what may be in flight
    /// between a server's writes and a delegate's calls.
    static let inFlightAllowance = 24 << 20

    /// How soon a cancelled transfer's connection must be closed. Alone it takes a few milliseconds (the note of issue
    /// 40 has the figures); the bound is loose because the suite runs in parallel on two cores, where 123 ms was seen:
    /// what it catches is a transfer that goes on (the audit's grew for seconds).
    static let stopBound: TimeInterval = 1

    @Test("a data delegate slower than the network holds the transfer back: what left the server stays bounded")
    func slowDelegateBoundsMemory() async throws {
        let server = try EndlessBodyServer()
        defer { server.stop() }
        let delegate = SlowDataDelegate(bytesPerSecond: 20 << 20)
        let session = Session(configuration: testConfiguration(), delegate: delegate, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: server.url)
        task.resume()
        try await Task.sleep(for: .seconds(2))
        let written = server.bytesWritten
        let consumed = delegate.bytesReceived
        #expect(consumed > 0)
        #expect(written - consumed < Self.inFlightAllowance, "server wrote \(written), the delegate had \(consumed)")
        task.cancel()
    }

    @Test(
        "cancel() stops reading the socket at once: the server sees the connection closed, and no more is sent",
        arguments: [nil, 20 << 20]
    )
    func cancelStopsTheTransfer(delegateRate: Int?) async throws {
        let server = try EndlessBodyServer()
        defer { server.stop() }
        let delegate = SlowDataDelegate(bytesPerSecond: delegateRate)
        let session = Session(configuration: testConfiguration(), delegate: delegate, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: server.url)
        task.resume()
        try await eventually(.seconds(10), "1 MiB delivered") { delegate.bytesReceived > 1 << 20 }
        let cancelled = Date()
        task.cancel()
        // Waited for past the bound, so that a miss says by how much (CI once found it open at 300 ms, over the
        // serialised backend with the suite in parallel, and said no more).
        try await eventually(.seconds(10), "the connection closed after cancel()") { server.clientClosedAt != nil }
        let closed = try #require(server.clientClosedAt)
        #expect(closed.timeIntervalSince(cancelled) < Self.stopBound, "closed \(closed.timeIntervalSince(cancelled)) s after cancel()")
        let settled = server.bytesWritten
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.bytesWritten == settled)
    }

    @Test("cancelling the Swift Task awaiting data(from:) ends the transfer at once and throws")
    func taskCancellationStopsDataFrom() async throws {
        let server = try EndlessBodyServer(bytesPerSecond: 50 << 20)
        defer { server.stop() }
        let session = Session(configuration: testConfiguration())
        defer { session.invalidateAndCancel() }
        let url = server.url
        let waiting = Task { try await session.data(from: url) }
        // The unstructured task runs on the global pool, which the whole suite's load can keep busy for seconds.
        try await eventually(.seconds(30), "1 MiB sent") { server.bytesWritten > 1 << 20 }
        let cancelled = Date()
        waiting.cancel()
        await #expect(throws: (any Error).self) { _ = try await waiting.value }
        try await Task.sleep(for: .milliseconds(200))
        let closed = try #require(server.clientClosedAt, "the connection is still open after the Task was cancelled")
        #expect(closed.timeIntervalSince(cancelled) < Self.stopBound, "closed \(closed.timeIntervalSince(cancelled)) s after")
    }

    @Test("maximumCollectedBodyLength: an announced body over it fails before it comes, an endless one as it passes")
    func collectedBodyLimit() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.maximumCollectedBodyLength = 100_000
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let (small, _) = try await session.data(from: server.url("/bytes/100000?seed=6"))
            #expect(small == TestServer.bytes(count: 100_000, seed: 6))
            await #expect {
                _ = try await session.data(from: server.url("/bytes/100001?seed=6"))
            } throws: { error in
                let error = error as? CourierError
                return error?.code == .dataLengthExceedsMaximum && error?.message.contains("100000 bytes") == true
            }
            // Chunked, no length: fails as the bytes pass the limit; a delegate's body is not limited.
            await #expect {
                _ = try await session.data(from: server.url("/bytes/300000?seed=6&chunked=1"))
            } throws: { error in
                (error as? CourierError)?.code == .dataLengthExceedsMaximum
            }
        }
        let endless = try EndlessBodyServer()
        defer { endless.stop() }
        var configuration = testConfiguration()
        configuration.maximumCollectedBodyLength = 1 << 20
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let url = endless.url
        await #expect {
            _ = try await session.data(from: url)
        } throws: { error in
            (error as? CourierError)?.code == .dataLengthExceedsMaximum
        }
    }
}
