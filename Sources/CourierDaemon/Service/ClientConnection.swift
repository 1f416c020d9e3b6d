import Courier
import CourierConcurrency
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One app's (or `courier`'s) connection to courierd: its peer, what it said of itself, and its outbox (frames are
/// queued, never written by the thread that sends them: ``ConnectionOutbox``).
///
/// What it sends goes through its outbox; what it says is read by a ``ConnectionReader``.
///
/// `Sendable`: `descriptor`, `pid` and `outbox` are constants; what the app said of itself is behind a lock (written
/// on the connection's reader queue, read there and by other connections' queues: the reclaim of a suspended
/// instance, the wake for a session's events).
final class ClientConnection: Sendable {
    private struct Said {
        var app: String?
        var inForeground = true
        var heardState = false
        /// When the app last said its lifecycle is stopping the process; nil once it said it was continued.
        var suspendedSince: Date?
        /// The version frames are written in: the newest both read (the hello says the app's).
        var writeVersion = IPCFrame.jsonVersion
    }

    let descriptor: Int32
    let pid: pid_t
    private let said = LockedValue(Said())

    var app: String? {
        get { said.withLock { $0.app } }
        set { said.withLock { $0.app = newValue } }
    }

    /// The app's last word on where it stands (hello, then `appState`).
    var inForeground: Bool {
        get { said.withLock { $0.inForeground } }
        set { said.withLock { $0.inForeground = newValue } }
    }

    /// The newest protocol version the app said it reads (its hello's): frames to it are written in the newest version
    /// both read.
    func appReads(_ version: UInt16?) {
        said.withLock { $0.writeVersion = IPCFrame.version(toWriteFor: version) }
    }

    /// The hello's word on the foreground was heard (later ones are changes).
    var heardState: Bool {
        get { said.withLock { $0.heardState } }
        set { said.withLock { $0.heardState = newValue } }
    }

    /// Since when the app says its lifecycle has suspended it (in the background: the user cannot see it); nil while
    /// it runs, and for a foreground app (one its user stopped with Ctrl-Z is left alone).
    var suspendedSince: Date? {
        said.withLock { $0.inForeground ? nil : $0.suspendedSince }
    }

    /// The app said it is suspended (`appState`), or continued. Returns whether this began a suspension.
    func saySuspended(_ suspended: Bool, at now: Date = Date()) -> Bool {
        said.withLock { said in
            defer { said.suspendedSince = suspended ? said.suspendedSince ?? now : nil }
            return suspended && said.suspendedSince == nil
        }
    }

    /// Continues the process, when its app said its lifecycle suspended it, for what courierd queued for it: once
    /// that is written to the socket (or the socket is full) and the process is stopped (``SuspendedProcess``), if
    /// something is still unread then.
    func continueIfSuspended() {
        guard suspendedSince != nil else {
            return
        }
        // Once what was queued is in its socket (or the socket is full: a stopped process makes no room for the rest):
        // the process, continued, finds it there and knows courierd woke it.
        // Only while it is there: a process that read it before it stopped, or was continued and stopped again since,
        // would take a continue with nothing to read for its user's, and come to the foreground.
        // (The outbox open: the descriptor is still this connection's.)
        outbox.afterWritten { [weak self, pid] in
            SuspendedProcess.continueOnceStopped(pid) { [weak self] in
                guard let self, outbox.isOpen, suspendedSince != nil else {
                    return false
                }
                return UnixSocket.unreadByPeer(descriptor) > 0
            }
        }
    }

    /// Whether this is an instance of `app` (nil: of any app) that the user cannot see: its lifecycle said it
    /// suspended it in the background, and it is stopped.
    func isSuspendedInstance(of app: String?) -> Bool {
        let name = said.withLock { $0.app }
        return (app == nil || name == app) && suspendedSince != nil && pid > 0 && ProcessState.isStopped(pid)
    }

    private let outbox: ConnectionOutbox

    /// `durability` is called before queued frames are written (every journal write made before they were queued is
    /// then on disk); `caughtUp` when the outbox has written everything after withholding events (``offer(_:)``).
    init(
        descriptor: Int32,
        pid: pid_t,
        outboxLimit: Int = ConnectionOutbox.defaultLimit,
        durability: @escaping @Sendable () -> Void,
        caughtUp: @escaping @Sendable () -> Void = {}
    ) {
        self.descriptor = descriptor
        self.pid = pid
        outbox = ConnectionOutbox(
            descriptor: descriptor,
            limit: outboxLimit,
            durability: durability,
            caughtUp: caughtUp
        )
    }

    /// Queues `message` (an answer, a wake); false when it cannot be encoded or the connection is closed.
    func send(_ message: IPCMessage) -> Bool {
        guard let frame = try? message.frame(version: said.withLock { $0.writeVersion }) else {
            return false
        }
        return outbox.send(frame.encoded)
    }

    /// Queues a session's events unless the outbox is full of what the app has not read (``ConnectionOutbox``).
    func offer(_ events: IPCMessage.Events) -> ConnectionOutbox.Offer {
        guard let frames = try? IPCMessage.frames(of: events, version: said.withLock { $0.writeVersion }) else {
            return .closed
        }
        return outbox.offer(frames.map(\.encoded))
    }

    /// Ends the outbox: called once the reader has finished, before the descriptor closes.
    func closeOutbox() {
        outbox.close()
    }

    /// Ends the connection (courierd stops): what the socket takes of the outbox now goes first (the answer to
    /// `stopDaemon`), then the reader wakes to the end of the stream.
    func shutDown() {
        outbox.close()
        Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }
}
