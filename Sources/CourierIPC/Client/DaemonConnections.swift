import CourierConcurrency

/// Every live connection of this process to courierd (the lifecycle's link, each background session's), seen as one:
/// what a suspended process needs to tell courierd's SIGCONT from the user's. courierd writes before it continues a
/// stopped process — a wake for a fetch or a push, a session's events — so bytes received since the stop mean it
/// was courierd.
package enum DaemonConnections {
    private struct State {
        var live: [ObjectIdentifier: DaemonConnection] = [:]
        /// Bytes received by every connection so far, counted as soon as each read returns.
        var bytesReceived: UInt64 = 0
    }

    /// Waited on by ``waitForReceived(since:atMost:)`` for a reader to count what it read.
    private static let state = WaitableValue(State())

    static func opened(_ connection: DaemonConnection) {
        state.withLock { $0.live[ObjectIdentifier(connection)] = connection }
    }

    static func ended(_ connection: DaemonConnection) {
        state.withLock { _ = $0.live.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    static func received(_ count: Int) {
        state.withLock { $0.bytesReceived += UInt64(count) }
    }

    /// Whether the process has any connection to courierd.
    package static var any: Bool {
        state.withLock { !$0.live.isEmpty }
    }

    /// How much every connection has received so far, taken before the process stops.
    package static func receiveMark() -> UInt64 {
        state.withLock { $0.bytesReceived }
    }

    /// Whether courierd has sent anything on any connection since `mark` (read already, or waiting to be read).
    package static func hasReceived(since mark: UInt64) -> Bool {
        let (received, live) = state.withLock { ($0.bytesReceived, Array($0.live.values)) }
        return received != mark || live.contains { $0.hasUnreadBytes }
    }

    /// Whether courierd has sent anything since `mark`, waiting at most `seconds` for it: a connection's reader
    /// continued at the same moment as the process may be between taking the bytes off the socket and counting them.
    package static func waitForReceived(since mark: UInt64, atMost seconds: Double) -> Bool {
        hasReceived(since: mark) || state.wait(atMost: seconds) { $0.bytesReceived != mark }
    }

    /// courierd's process (the peer of a live connection), which sends SIGCONT to resume the suspended application;
    /// nil while none is connected.
    package static var daemonProcess: Int32? {
        let live = state.withLock { Array($0.live.values) }
        return live.lazy.filter { !$0.hasEnded }.compactMap { $0.peer?.pid }.first
    }
}
