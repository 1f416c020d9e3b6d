#if canImport(Glibc)
package import Glibc
#endif

/// Who is at the other end of a Unix socket, as the kernel says (`SO_PEERCRED`): not what the peer claims.
package struct PeerCredentials: Sendable, Equatable {
    package var pid: pid_t
    package var uid: uid_t
    package var gid: gid_t

    package init(pid: pid_t, uid: uid_t, gid: gid_t) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The credentials of the peer of the connected Unix socket `descriptor`; nil when the kernel gives none.
    package static func of(socket descriptor: Int32) -> PeerCredentials? {
        // `struct ucred { pid_t pid; uid_t uid; gid_t gid; }`, which Glibc's module map hides (it needs _GNU_SOURCE).
        var credentials: (pid: pid_t, uid: uid_t, gid: gid_t) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(pid_t, uid_t, gid_t)>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            Int(length) == MemoryLayout<(pid_t, uid_t, gid_t)>.size
        else {
            return nil
        }
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// courierd serves its own user only; any other uid (root included) is refused and logged.
    package func isAdmitted(byDaemonOf uid: uid_t) -> Bool {
        self.uid == uid
    }
}
