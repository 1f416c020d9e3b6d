/// A client the comparison runs: Courier, or a peer a Swift developer on Linux would otherwise pick.
public enum Peer: String, Sendable, Hashable, Codable, CaseIterable {
    /// Courier's `Session`, through its URLSession-shaped async API.
    case courier
    /// Courier's `Session`, through its swift-http-types async API (`HTTPRequest` in, `HTTPResponse` out), which
    /// builds no `HTTPURLResponse` (`bench-courier-ht`).
    case courierHTTPTypes = "courier-ht"
    /// FoundationNetworking's `URLSession`, through its async API.
    case urlsession
    /// AsyncHTTPClient on its singleton event loop group.
    case ahc
    /// The curl command line with `--parallel` (the same libcurl, no Swift above it).
    case curl
    /// Not a peer but a reference: Courier's engine with the least Swift an async API returning
    /// `(Data, HTTPURLResponse)` needs (`bench-floor`). Courier does all of that and more, so on W1 and W2 it
    /// should not be faster than this beyond run-to-run noise.
    case floor
    /// Courier's background session: every transfer runs in courierd, the per-user daemon, which journals it and
    /// hands the finished file to the app (`bench-courier-bg`, which starts its own courierd). Download workloads
    /// only (a background session has no data tasks and uploads only from files); the harness runs it on W4.
    case courierBackground = "courier-bg"
    /// The C reference: libcurl's multi interface on one libuv loop, in the shape of curl's
    /// `docs/examples/multi-uv.c`, bodies counted and dropped (`bench-c`). What the same libcurl costs with nothing
    /// above it: the per-request targets are set against it.
    case c

    public var displayName: String {
        switch self {
        case .courier: "Courier"
        case .courierHTTPTypes: "Courier, swift-http-types API"
        case .urlsession: "URLSession (FoundationNetworking)"
        case .ahc: "AsyncHTTPClient"
        case .curl: "curl --parallel"
        case .floor: "Floor: engine + minimal async Swift"
        case .courierBackground: "Courier, background session (courierd)"
        case .c: "C: libcurl multi + libuv (reference)"
        }
    }

    /// Whether the harness runs this client on `workload`. The background session runs the workloads its targets are
    /// set on: W4 (at least 0.8× Courier's in-process throughput) and W6 (at least 0.5×). W2 at curl's limit
    /// (``Workload/w2AtCurlLimit``) compares memory with curl at the same number in flight: Courier's two APIs and
    /// curl only. W7 (ten thousand open at once) runs Courier's in-process APIs, the floor, AsyncHTTPClient and the C
    /// reference: curl takes at most 300 at once, and FoundationNetworking's URLSession is not what issue 44 compares.
    public func runs(_ workload: Workload) -> Bool {
        if workload.name == Workload.w2AtCurlLimit.name {
            return [.courier, .courierHTTPTypes, .curl].contains(self)
        }
        if workload.name == Workload.w7.name {
            return [.courier, .courierHTTPTypes, .floor, .ahc, .c].contains(self)
        }
        switch self {
        case .courierBackground: return [Workload.w4.name, Workload.w6.name].contains(workload.name)
        case .courier, .courierHTTPTypes, .urlsession, .ahc, .curl, .floor, .c: return true
        }
    }
}
