import Foundation

/// A session's `connectionProxyDictionary`, read: which proxy a URL goes through, and which hosts bypass it.
struct ProxySettings: Sendable, Equatable {
    struct Proxy: Sendable, Equatable {
        var host: String
        var port: Int
        /// How the connection to the proxy is made: `http`, `https` (TLS to the proxy), `socks5h` (SOCKS5, names
        /// resolved by the proxy) or `socks4a`.
        var scheme = "http"
        /// A credential sent from the start (a SOCKS proxy's username and password).
        var user: String?
        var password: String?
    }

    var http: Proxy?
    var https: Proxy?
    /// The SOCKS proxy, for the URLs of a scheme that has no proxy of its own above.
    var socks: Proxy?
    /// Hosts and domains that bypass the proxies, as curl's `NO_PROXY` takes them (comma-separated; `*.example.com`
    /// is written `.example.com`).
    var exceptions: String?
    /// The dictionary it was read from, for the getter: its string keys with string, number and string-list values.
    private var strings: [String: String] = [:]
    private var numbers: [String: Int] = [:]
    private var lists: [String: [String]] = [:]

    var dictionary: [AnyHashable: Any] {
        var dictionary: [AnyHashable: Any] = [:]
        for (key, value) in strings { dictionary[key] = value }
        for (key, value) in numbers { dictionary[key] = value }
        for (key, value) in lists { dictionary[key] = value }
        return dictionary
    }

    init(_ dictionary: [AnyHashable: Any]) {
        func string(_ key: String) -> String? {
            (dictionary[key] as? String).flatMap { $0.isEmpty ? nil : $0 }
        }
        func number(_ key: String) -> Int? {
            if let value = dictionary[key] as? Int { return value }
            if let value = dictionary[key] as? NSNumber { return value.intValue }
            return (dictionary[key] as? String).flatMap { Int($0) }
        }
        func proxy(enable: String, host: String, port: String, defaultPort: Int) -> Proxy? {
            guard number(enable) != 0, let name = string(host) else {
                return nil
            }
            // A host given as a URL names its scheme: `https://proxy.example:8443` is reached over TLS.
            if name.contains("://"), let url = URL(string: name), let scheme = url.scheme?.lowercased(),
                ["http", "https"].contains(scheme), let host = url.host
            {
                return Proxy(host: host, port: url.port ?? number(port) ?? defaultPort, scheme: scheme)
            }
            return Proxy(host: name, port: number(port) ?? defaultPort)
        }
        http = proxy(enable: "HTTPEnable", host: "HTTPProxy", port: "HTTPPort", defaultPort: 80)
        https = proxy(enable: "HTTPSEnable", host: "HTTPSProxy", port: "HTTPSPort", defaultPort: 443)
        socks = proxy(enable: "SOCKSEnable", host: "SOCKSProxy", port: "SOCKSPort", defaultPort: 1080)
        socks?.scheme = number("SOCKSVersion") == 4 ? "socks4a" : "socks5h"
        socks?.user = string("SOCKSUser")
        socks?.password = string("SOCKSPassword")
        let list = (dictionary["ExceptionsList"] as? [String]) ?? []
        let hosts = list.map { $0.hasPrefix("*.") ? String($0.dropFirst()) : $0 }.filter { !$0.isEmpty }
        exceptions = hosts.isEmpty ? nil : hosts.joined(separator: ",")
        for case (let key as String, let value) in dictionary {
            if let text = value as? String {
                strings[key] = text
            } else if let number = value as? Int {
                numbers[key] = number
            } else if let list = value as? [String] {
                lists[key] = list
            }
        }
    }

    /// The proxy for `url`, as curl takes it: `scheme://[user:password@]host:port`, or "" for none.
    func proxy(for url: URL) -> String {
        let scheme = url.scheme?.lowercased()
        let chosen = (scheme == "https" || scheme == "https+unix" ? https : http) ?? socks
        guard let chosen else {
            return ""
        }
        let host = chosen.host.contains(":") && !chosen.host.hasPrefix("[") ? "[\(chosen.host)]" : chosen.host
        var credential = ""
        if let user = chosen.user {
            let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
            let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text }
            credential = encode(user) + ":" + encode(chosen.password ?? "") + "@"
        }
        return "\(chosen.scheme)://\(credential)\(host):\(chosen.port)"
    }

    /// The proxy a request to `url` goes through: the session's, else the environment's (`https_proxy`,
    /// `http_proxy`, `all_proxy`, either case); nil for none.
    static func endpoint(
        for url: URL,
        settings: ProxySettings?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Proxy? {
        let https = url.scheme?.lowercased() == "https"
        if let settings {
            return (https ? settings.https : settings.http) ?? settings.socks
        }
        let names = (https ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy"]) + ["all_proxy", "ALL_PROXY"]
        guard let text = names.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
            return nil
        }
        let withScheme = text.contains("://") ? text : "http://" + text
        guard let proxy = URL(string: withScheme), let host = proxy.host else {
            return nil
        }
        return Proxy(host: host, port: proxy.port ?? 1080)
    }
}
