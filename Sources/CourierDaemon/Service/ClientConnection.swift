import Courier
import CourierConcurrency

#if canImport(Glibc)
import Glibc
#endif

/// One app's (or `courier`'s) connection to courierd: its peer, what it said of itself, and frames written whole.
///
/// `Sendable`: `descriptor` and `pid` are constants; what the app said of itself is behind a lock (written on the
/// connection's reader thread, read there and by other connections' threads: the reclaim of a suspended instance, the
/// wake for a session's events); sends hold `writeLock`.
final class ClientConnection: Sendable {
    private struct Said {
        var app: String?
        var inForeground = true
        var heardState = false
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

    /// The hello's word on the foreground was heard (later ones are changes).
    var heardState: Bool {
        get { said.withLock { $0.heardState } }
        set { said.withLock { $0.heardState = newValue } }
    }

    /// Whether this is an instance of `app` (nil: of any app) that the user cannot see: in the background and stopped
    /// (suspended by its lifecycle). A stopped foreground process was stopped by its user (Ctrl-Z), and is left alone.
    func isSuspendedInstance(of app: String?) -> Bool {
        let (name, inForeground) = said.withLock { ($0.app, $0.inForeground) }
        return (app == nil || name == app) && !inForeground && pid > 0 && ProcessState.isStopped(pid)
    }
    /// Held while a frame is written; counts the frames. (Not `()`: TSan reports inout access to a zero-sized value
    /// as a race.)
    private let writeLock = LockedValue<UInt64>(0)

    /// Called before each message is sent: every journal write made before it is then on disk (group commit), so
    /// that nothing the app is told — a task exists, an event happened — can be undone by a power cut.
    private let durability: @Sendable () -> Void

    init(descriptor: Int32, pid: pid_t, durability: @escaping @Sendable () -> Void) {
        self.descriptor = descriptor
        self.pid = pid
        self.durability = durability
    }

    func send(_ message: IPCMessage) -> Bool {
        guard let frame = try? message.frame() else {
            return false
        }
        durability()
        return writeLock.withLock { written in
            written += 1
            return UnixSocket.write(frame.encoded, to: descriptor)
        }
    }

    func shutDown() {
        Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// Reads frames until the peer closes, a frame is bad, or `handle` says why the connection must close (its
    /// answer); returns the reason. A bad frame gets a `failure` first.
    func readMessages(_ handle: (IPCMessage) -> String?) -> String {
        var decoder = IPCFrameDecoder()
        while true {
            let bytes = UnixSocket.read(from: descriptor)
            do throws(IPCError) {
                if bytes.isEmpty {
                    try decoder.finish()
                    return "the client closed the connection"
                }
                for frame in try decoder.feed(bytes) {
                    if let refusal = handle(try IPCMessage(frame: frame)) {
                        return refusal
                    }
                }
            } catch {
                _ = send(.failure(.init(request: nil, error: CourierError(.unknown, "\(error)"))))
                return "protocol error: \(error)"
            }
        }
    }
}
