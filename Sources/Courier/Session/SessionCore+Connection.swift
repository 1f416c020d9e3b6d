import Foundation

extension SessionCore {
    /// How a hop to `url` connects (``ConnectionOptions``): the configuration's TLS versions, pins, client identity
    /// and targeting, and what the session decided about the server; nil when all are libcurl's defaults.
    /// `taskHasOwnDelegate`: the task has a delegate of its own (``SessionTask/delegate``), which is offered the
    /// server-trust challenges of a server the session has not decided about, whatever the session's delegate did.
    func connectionOptions(for url: URL, taskHasOwnDelegate: Bool = false) -> ConnectionOptions? {
        let configuration = self.configuration
        let offersServerTrust = self.offersServerTrust || taskHasOwnDelegate && configuration.identifier == nil
        if configuration.connectionSettingsAreDefault {
            // The common case, with no string made of the URL: no option, and no delegate to judge servers (or a
            // plain http URL).
            guard offersServerTrust && url.scheme != "http" || UnixSocketURL.names(url) else {
                return nil
            }
        }
        var options = ConnectionOptions()
        let host = url.host?.lowercased() ?? ""
        let port = RedirectPolicy.effectivePort(url)
        let scheme = url.scheme?.lowercased()
        options.pinnedPublicKeys = configuration.pinnedPublicKeys[host] ?? []
        if configuration.tlsMinimumSupportedProtocolVersion != .TLSv10 {
            options.tlsMinimum = configuration.tlsMinimumSupportedProtocolVersion.rawValue
        }
        if configuration.tlsMaximumSupportedProtocolVersion != .TLSv13 {
            options.tlsMaximum = configuration.tlsMaximumSupportedProtocolVersion.rawValue
        }
        options.clientCertificate = configuration.clientIdentity?.engineCertificate
        options.proxyClientCertificate = configuration.proxyClientIdentity?.engineCertificate
        options.unixSocketPath = UnixSocketURL.socketPath(of: url) ?? configuration.unixSocketPath
        if let addresses = configuration.hostAddresses[host], !addresses.isEmpty {
            options.resolve = ["\(host):\(port):" + addresses.joined(separator: ",")]
        }
        switch configuration.addressFamily {
        case .any: break
        case .ipv4: options.ipVersion = 4
        case .ipv6: options.ipVersion = 6
        }
        options.interface = configuration.sourceInterface
        options.dnsOverHTTPSURL = configuration.dnsOverHTTPSURL?.absoluteString
        if offersServerTrust, scheme == "https" || scheme == "https+unix" {
            let (judges, decision, probing) = serverTrust.withLock {
                ($0.delegateJudges, $0.decision(host: host, port: port), $0.isProbing(host: host, port: port))
            }
            switch decision {
            case _ where probing:
                options.trust = .probe
            case .verified(let key):
                options.pinnedPublicKeys = [key]
            case .accepted(let key):
                options.trust = .accepted
                options.pinnedPublicKeys = [key]
            case nil:
                options.trust = judges == false && !taskHasOwnDelegate ? .verify : .ask
            }
        }
        return options.isDefault ? nil : options
    }
}

/// HTTP over a Unix-domain socket, in AsyncHTTPClient's spelling: `http+unix://` (or `https+unix://`) with the
/// socket's path, percent-encoded, as the host: `http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info`.
enum UnixSocketURL {
    static let schemes: Set<String> = ["http+unix", "https+unix"]

    /// Whether `url` is such a URL.
    static func names(_ url: URL) -> Bool {
        guard let scheme = url.scheme, scheme != "http", scheme != "https" else {
            return false
        }
        return schemes.contains(scheme.lowercased())
    }

    /// The socket's path of such a URL; nil for other URLs.
    static func socketPath(of url: URL) -> String? {
        guard names(url), let scheme = url.scheme?.lowercased(), schemes.contains(scheme),
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let host = components.percentEncodedHost, !host.isEmpty
        else {
            return nil
        }
        return host.removingPercentEncoding ?? host
    }

    /// The URL the engine requests over the socket: `http://localhost` (or `https`) with the path and query.
    static func engineURL(_ url: URL) -> String? {
        guard names(url), let scheme = url.scheme?.lowercased(),
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else {
            return nil
        }
        components.scheme = scheme == "https+unix" ? "https" : "http"
        components.percentEncodedHost = "localhost"
        components.user = nil
        components.password = nil
        return components.url?.absoluteString
    }
}
