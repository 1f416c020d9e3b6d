import CourierConcurrency
import CourierIPC

/// A background session identifier held by a live `Session` of this process, for one courierd (its state
/// directory): one `Session` per identifier, as Apple asks of background sessions ("You must create exactly one
/// session per identifier"; more is undefined there). A second `Session` made with a held identifier is refused at
/// once with `backgroundSessionInUse` and never reaches courierd: when it did, the two raced for courierd's session
/// whenever courierd restarted, and the first ended tasks courierd still had as lost.
///
/// Held from the session's opening until its link to courierd ends (``DaemonBackend/end()``: the session was
/// invalidated or released) or the claim is released; released at most once.
final class BackgroundIdentifierClaim: Sendable {
    private static let held = LockedValue<Set<String>>([])

    private let key: String
    private let released = OnceFlag()

    private init(key: String) {
        self.key = key
    }

    /// Claims `identifier` for the courierd of `paths`; nil while another live `Session` of this process holds it.
    static func take(_ identifier: String, paths: DaemonPaths) -> BackgroundIdentifierClaim? {
        let key = paths.stateDirectory.path + "\n" + identifier
        let taken = held.withLock { $0.insert(key).inserted }
        return taken ? BackgroundIdentifierClaim(key: key) : nil
    }

    /// Frees the identifier for another `Session` of this process.
    func release() {
        if released.claim() {
            _ = Self.held.withLock { $0.remove(key) }
        }
    }

    deinit {
        release()
    }
}
