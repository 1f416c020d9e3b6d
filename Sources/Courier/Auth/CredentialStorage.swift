import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Credentials a session uses when it handles an authentication challenge by default.
///
/// Keyed by host, port and realm (a nil realm matches any realm of that host and port). Thread-safe.
public final class CredentialStorage: Sendable {
    private struct Key: Hashable {
        var host: String
        var port: Int
        var realm: String?
    }

    private let credentials = LockedValue<[Key: URLCredential]>([:])

    /// The process-wide store of ``SessionConfiguration/default`` configurations.
    public static let shared = CredentialStorage()

    public init() {}

    /// Stores `credential` for a host and port, and optionally a realm.
    public func set(_ credential: URLCredential, host: String, port: Int, realm: String? = nil) {
        credentials.withLock { $0[Key(host: host.lowercased(), port: port, realm: realm)] = credential }
    }

    /// Stores `credential` for a protection space.
    public func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        set(credential, host: space.host, port: space.port, realm: space.realm)
    }

    /// Removes everything.
    public func removeAll() {
        credentials.withLock { $0.removeAll() }
    }

    /// The credential for a protection space: an exact realm match first, then a realm-less entry.
    public func credential(for space: URLProtectionSpace) -> URLCredential? {
        let host = space.host.lowercased()
        return credentials.withLock { table in
            table[Key(host: host, port: space.port, realm: space.realm)]
                ?? table[Key(host: host, port: space.port, realm: nil)]
        }
    }
}
