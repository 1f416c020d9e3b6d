import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a session decided about the TLS servers its delegate judged (server-trust challenges), and whether its
/// delegate judges them at all. Held by the session's core; read when each hop's connection options are made.
///
/// A server is decided by its host, port and the public key of its leaf certificate: a later connection to it is
/// pinned to that key, so a server that presents another key is a new challenge, never a decided one.
struct ServerTrustDecisions: Sendable {
    enum Decision: Sendable, Equatable {
        /// The default handling accepted it (it verified): verified again on each connection, and pinned.
        case verified(publicKeyHash: String)
        /// The delegate accepted it (`.useCredential`): not verified, only pinned.
        case accepted(publicKeyHash: String)

        var publicKeyHash: String {
            switch self {
            case .verified(let key), .accepted(let key): key
            }
        }
    }

    private struct Server: Hashable {
        var host: String
        var port: Int
    }

    /// nil until a challenge shows whether the delegate answers them; false once both delegate methods answered with
    /// their default implementations (no later connection stops to ask).
    private(set) var delegateJudges: Bool?
    private var decisions: [Server: Decision] = [:]
    /// The verdicts of servers whose chain failed to verify, until a probe reads their chain.
    private var probing: [Server: Int] = [:]

    func decision(host: String, port: Int) -> Decision? {
        decisions[Server(host: host.lowercased(), port: port)]
    }

    mutating func record(_ decision: Decision, host: String, port: Int) {
        decisions[Server(host: host.lowercased(), port: port)] = decision
    }

    /// Remembers why `host`'s chain failed to verify: its next hop probes for the chain
    /// (``ConnectionOptions/Trust/probe``).
    mutating func probe(host: String, port: Int, verdict: Int) {
        probing[Server(host: host.lowercased(), port: port)] = verdict
    }

    func isProbing(host: String, port: Int) -> Bool {
        probing[Server(host: host.lowercased(), port: port)] != nil
    }

    /// The verdict a probe of `host` stands for (and forgets it).
    mutating func probed(host: String, port: Int) -> Int? {
        probing.removeValue(forKey: Server(host: host.lowercased(), port: port))
    }

    mutating func learn(delegateJudges: Bool) {
        if self.delegateJudges != true {
            self.delegateJudges = delegateJudges
        }
    }

    /// The credentials the default implementations of the two challenge methods answer with, so that a session
    /// learns its delegate does not judge servers and stops asking (a Swift protocol cannot say whether a method was
    /// implemented).
    static let sessionDefaultMarker = URLCredential(user: "", password: "", persistence: .none)
    static let taskDefaultMarker = URLCredential(user: "", password: "", persistence: .none)
}
