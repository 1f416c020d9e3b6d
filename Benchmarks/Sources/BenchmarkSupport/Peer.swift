/// A client the comparison runs: Courier, or a peer a Swift developer on Linux would otherwise pick.
public enum Peer: String, Sendable, Hashable, Codable, CaseIterable {
    /// Courier's `Session`, through its async API.
    case courier
    /// FoundationNetworking's `URLSession`, through its async API.
    case urlsession
    /// AsyncHTTPClient on its singleton event loop group.
    case ahc
    /// The curl command line with `--parallel` (the same libcurl, no Swift above it).
    case curl

    public var displayName: String {
        switch self {
        case .courier: "Courier"
        case .urlsession: "URLSession (FoundationNetworking)"
        case .ahc: "AsyncHTTPClient"
        case .curl: "curl --parallel"
        }
    }
}
