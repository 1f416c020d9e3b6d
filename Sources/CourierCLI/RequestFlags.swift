import ArgumentParser
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The options of `courier get` and `courier put` that say how requests are made and whom they reach, in curl's
/// spelling: header fields, a user, TLS trust and versions, a client certificate, a proxy, a Unix socket, names
/// answered without DNS.
struct RequestFlags: ParsableArguments {
    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("An extra request header field, \"Name: value\" (repeatable).", valueName: "header")
    )
    var headers: [String] = []

    @Option(
        name: [.customShort("u"), .customLong("user")],
        help: ArgumentHelp(
            "user:password, sent with Basic authentication (to the URL's origin only).",
            valueName: "user"
        )
    )
    var user: String?

    @Option(
        help: ArgumentHelp(
            "Send cookies: a Netscape cookie file (as curl -c and wget write them), or \"name=value; name2=value2\". "
                + "(-b is --background here.)",
            valueName: "file|data"
        )
    )
    var cookie: String?

    @Option(
        help: ArgumentHelp(
            "Keep the run's cookies in this Netscape cookie file (read first when it exists, written as they come). "
                + "(-c is --continue here.)",
            valueName: "file"
        )
    )
    var cookieJar: String?

    @Flag(help: "Answer servers' authentication challenges with ~/.netrc's machines.")
    var netrc = false

    @Option(help: ArgumentHelp("As --netrc, with this file.", valueName: "file"))
    var netrcFile: String?

    @Flag(
        name: [.customShort("k"), .customLong("insecure")],
        help: "Accept any server's certificate (unknown CA, wrong name, expired). Says so on every run."
    )
    var insecure = false

    @Option(help: ArgumentHelp("Trust only the CA certificates in this PEM file.", valueName: "file"))
    var cacert: String?

    @Option(
        name: .customLong("pinnedpubkey"),
        help: ArgumentHelp(
            "The server's public key must be one of these: sha256//BASE64[;sha256//BASE64...] (as curl takes them).",
            valueName: "hashes"
        )
    )
    var pinnedPublicKey: String?

    @Option(
        name: [.customShort("E"), .customLong("cert")],
        help: ArgumentHelp("A client certificate for servers that ask for one: PEM (with its key, unless --key), or "
            + "PKCS#12 with --cert-type P12.", valueName: "file")
    )
    var certificate: String?

    @Option(help: ArgumentHelp("The client certificate's private key (PEM).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("PEM (default) or P12.", valueName: "type"))
    var certType: String = "PEM"

    @Option(help: ArgumentHelp("The password of the key (or of the PKCS#12 file).", valueName: "password"))
    var pass: String?

    @Flag(name: .customLong("tlsv1.2"), help: "Use TLS 1.2 or newer.")
    var tls12 = false

    @Flag(name: .customLong("tlsv1.3"), help: "Use TLS 1.3 only (or newer).")
    var tls13 = false

    @Option(help: ArgumentHelp("The newest TLS version to use: 1.2 or 1.3.", valueName: "version"))
    var tlsMax: String?

    @Option(
        name: [.customShort("x"), .customLong("proxy")],
        help: ArgumentHelp(
            "Use this proxy for every URL: [http://]host[:port], https://host[:port], "
                + "or socks5h://[user:pass@]host[:port].",
            valueName: "proxy"
        )
    )
    var proxy: String?

    @Option(help: ArgumentHelp("Connect to this Unix-domain socket instead of the URL's host.", valueName: "path"))
    var unixSocket: String?

    @Option(
        help: ArgumentHelp("Connect to ADDRESS for HOST (and PORT), without DNS: host:port:address (repeatable).",
                           valueName: "host:port:address")
    )
    var resolve: [String] = []

    @Flag(name: .customShort("4"), help: "Connect over IPv4 only.")
    var ipv4 = false

    @Flag(name: .customShort("6"), help: "Connect over IPv6 only.")
    var ipv6 = false

    @Option(help: ArgumentHelp("Send from this interface, address or host name.", valueName: "name"))
    var interface: String?

    @Option(help: ArgumentHelp("Resolve host names with this DNS-over-HTTPS server.", valueName: "url"))
    var dohURL: String?

    func validate() throws {
        for header in headers {
            _ = try Self.headerField(header)
        }
        if let user, !user.contains(":") {
            throw ValidationError("--user takes user:password (got no ':').")
        }
        if let pinnedPublicKey {
            _ = try Self.pins(pinnedPublicKey)
        }
        guard ["PEM", "P12"].contains(certType.uppercased()) else {
            throw ValidationError("--cert-type takes PEM or P12 (got \(certType)).")
        }
        if key != nil && certificate == nil {
            throw ValidationError("--key goes with --cert.")
        }
        if let tlsMax, Self.tlsVersion(tlsMax) == nil {
            throw ValidationError("--tls-max takes 1.2 or 1.3 (got \(tlsMax)).")
        }
        if ipv4 && ipv6 {
            throw ValidationError("-4 and -6 exclude each other.")
        }
        for entry in resolve where Self.resolveEntry(entry) == nil {
            throw ValidationError("--resolve takes host:port:address (got \(entry)).")
        }
        if let proxy, Self.proxyDictionary(proxy) == nil {
            throw ValidationError("--proxy takes [http://]host[:port], https:// or socks5h:// (got \(proxy)).")
        }
        if let dohURL, URL(string: dohURL)?.scheme?.lowercased() != "https" {
            throw ValidationError("--doh-url takes an https URL (got \(dohURL)).")
        }
    }

    /// The header fields of `-H` (checked by ``validate()``).
    var headerFields: [(name: String, value: String)] {
        headers.compactMap { try? Self.headerField($0) }
    }

    /// Sets what these flags say on `configuration` for a run whose URLs name `hosts`; reads the certificate, cookie
    /// and .netrc files. Throws what cannot be read.
    func apply(to configuration: inout SessionConfiguration, hosts: [String]) throws(CommandFailure) {
        if cookie != nil || cookieJar != nil {
            configuration.httpCookieStorage = try cookieStorage()
        }
        if netrc || netrcFile != nil {
            let home = FileManager.default.homeDirectoryForCurrentUser
            let path = netrcFile ?? home.appendingPathComponent(".netrc").path
            let storage = CredentialStorage()
            do {
                try storage.readNetrcFile(at: URL(fileURLWithPath: path))
            } catch {
                throw CommandFailure(description: "\(netrcFile == nil ? "--netrc" : "--netrc-file") \(path): cannot "
                    + "read it (missing, or not a readable file)")
            }
            configuration.urlCredentialStorage = storage
        }
        if let cacert {
            configuration.trustedCertificateAuthorities = .pem(try Self.read(cacert, for: "--cacert"))
        }
        if let pinnedPublicKey, let pins = try? Self.pins(pinnedPublicKey) {
            // curl pins whatever host a URL names; Courier's pins are by host: each host of the run gets them.
            configuration.pinnedPublicKeys = Dictionary(hosts.map { ($0.lowercased(), pins) }) { first, _ in first }
        }
        if let certificate {
            let data = try Self.read(certificate, for: "--cert")
            if certType.uppercased() == "P12" {
                configuration.clientIdentity = .pkcs12(data, password: pass)
            } else {
                let key = try key.map { path throws(CommandFailure) in try Self.read(path, for: "--key") }
                configuration.clientIdentity = .pem(certificate: data, privateKey: key, password: pass)
            }
        }
        if tls13 {
            configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
        } else if tls12 {
            configuration.tlsMinimumSupportedProtocolVersion = .TLSv12
        }
        if let version = tlsMax.flatMap(Self.tlsVersion) {
            configuration.tlsMaximumSupportedProtocolVersion = version
        }
        if let proxy {
            configuration.connectionProxyDictionary = Self.proxyDictionary(proxy)
        }
        configuration.unixSocketPath = unixSocket
        for (host, address) in resolve.compactMap(Self.resolveEntry) {
            configuration.hostAddresses[host, default: []].append(address)
        }
        configuration.addressFamily = ipv4 ? .ipv4 : ipv6 ? .ipv6 : .any
        configuration.sourceInterface = interface
        configuration.dnsOverHTTPSURL = dohURL.flatMap(URL.init(string:))
    }

    /// The jar of `--cookie` and `--cookie-jar`: the jar's file (kept as cookies come), with `--cookie`'s file read
    /// into it.
    private func cookieStorage() throws(CommandFailure) -> CookieStorage {
        let storage: CookieStorage
        do {
            storage = try cookieJar.map { try CookieStorage(persistingTo: URL(fileURLWithPath: $0)) } ?? CookieStorage()
        } catch {
            throw CommandFailure(description: "--cookie-jar \(cookieJar ?? ""): cannot read it: \(error)")
        }
        if let cookie, cookieFieldValue == nil {
            do {
                try storage.readNetscapeFile(at: URL(fileURLWithPath: cookie))
            } catch {
                throw CommandFailure(
                    description: "--cookie \(cookie): cannot read it (missing, or not a readable file)"
                )
            }
        }
        return storage
    }

    /// `--cookie "name=value; …"` (not a file), sent as it is in a `Cookie` field.
    var cookieFieldValue: String? {
        guard let cookie, cookie.contains("="), !FileManager.default.fileExists(atPath: cookie) else {
            return nil
        }
        return cookie
    }

    /// `Authorization: Basic …` for `--user`, to go with every request of the run (dropped on a redirect to another
    /// origin, as every credential is).
    var authorizationField: (name: String, value: String)? {
        user.map { ("Authorization", "Basic " + Data($0.utf8).base64EncodedString()) }
    }

    /// The header fields every request of the run carries: `-H`'s, then `--user`'s and `--cookie`'s data.
    var allHeaderFields: [(name: String, value: String)] {
        headerFields + [authorizationField, cookieFieldValue.map { ("Cookie", $0) }].compactMap { $0 }
    }

    /// A coordinator's answer to a session challenge: with `--insecure`, any server is accepted; otherwise the
    /// session verifies it.
    static func judge(
        _ challenge: URLAuthenticationChallenge,
        acceptingAnyServer: Bool
    ) -> (Session.AuthChallengeDisposition, URLCredential?) {
        if acceptingAnyServer, let trust = challenge.protectionSpace.serverTrustDetails {
            return (.useCredential, URLCredential(trust: trust))
        }
        return (.performDefaultHandling, nil)
    }

    /// The warning `--insecure` prints on every run.
    static let insecureWarning =
        "warning: --insecure: servers' certificates are not checked; anyone on the path can read and change "
        + "this transfer"

    // MARK: Parsing

    /// `Name: value` split into its name (an HTTP token) and value (surrounding spaces removed). Line breaks
    /// and other control characters are refused: they would end the field and start another.
    static func headerField(_ text: String) throws -> (name: String, value: String) {
        guard let colon = text.firstIndex(of: ":") else {
            throw ValidationError("--header '\(text)' is not \"Name: value\".")
        }
        let name = String(text[..<colon])
        let value = text[text.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        let tokenPunctuation = Set("!#$%&'*+-.^_`|~".unicodeScalars)
        let isToken = !name.isEmpty
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || tokenPunctuation.contains($0))
            }
        guard isToken else {
            throw ValidationError("--header '\(text)': '\(name)' is not a valid header name.")
        }
        guard !value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
            throw ValidationError("--header '\(name)': the value must not contain line breaks or control characters.")
        }
        return (name, value)
    }

    /// The base64 SHA-256 hashes of `sha256//A;sha256//B`.
    static func pins(_ text: String) throws -> [String] {
        try text.split(separator: ";").map { part in
            let hash = part.trimmingCharacters(in: .whitespaces)
            guard hash.hasPrefix("sha256//"), let bytes = Data(base64Encoded: String(hash.dropFirst(8))),
                bytes.count == 32
            else {
                throw ValidationError("--pinnedpubkey takes sha256//BASE64 hashes of 32 bytes, ';'-separated.")
            }
            return String(hash.dropFirst(8))
        }
    }

    static func tlsVersion(_ text: String) -> TLSProtocolVersion? {
        switch text {
        case "1.2": .TLSv12
        case "1.3": .TLSv13
        default: nil
        }
    }

    /// `host:port:address` as the host and the address (IPv6 addresses in brackets, as curl writes them).
    static func resolveEntry(_ text: String) -> (host: String, address: String)? {
        let parts = text.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, Int(parts[1]) != nil, !parts[2].isEmpty else {
            return nil
        }
        var address = parts[2]
        if address.hasPrefix("["), address.hasSuffix("]") {
            address = String(address.dropFirst().dropLast())
        }
        return (parts[0].lowercased(), address)
    }

    /// `--proxy` as a `connectionProxyDictionary` for both http and https URLs: an HTTP proxy (`http://`, or
    /// `https://` reached over TLS), or a SOCKS one (`socks5://`, `socks5h://`, `socks4://`, `socks4a://`, names
    /// resolved by the proxy), with its `user:password@` for SOCKS5.
    static func proxyDictionary(_ text: String) -> [AnyHashable: Any]? {
        let withScheme = text.contains("://") ? text : "http://" + text
        guard let url = URL(string: withScheme), let scheme = url.scheme?.lowercased(), let host = url.host,
            !host.isEmpty
        else {
            return nil
        }
        switch scheme {
        case "http", "https":
            let port = url.port ?? (scheme == "https" ? 443 : 1080)
            let proxy = scheme == "https" ? "https://\(host):\(port)" : host
            return ["HTTPEnable": 1, "HTTPProxy": proxy, "HTTPPort": port, "HTTPSEnable": 1, "HTTPSProxy": proxy,
                    "HTTPSPort": port]
        case "socks5", "socks5h", "socks4", "socks4a":
            var dictionary: [AnyHashable: Any] = [
                "SOCKSEnable": 1, "SOCKSProxy": host, "SOCKSPort": url.port ?? 1080,
                "SOCKSVersion": scheme.hasPrefix("socks4") ? 4 : 5,
            ]
            dictionary["SOCKSUser"] = url.user?.removingPercentEncoding
            dictionary["SOCKSPassword"] = url.password?.removingPercentEncoding
            return dictionary
        default:
            return nil
        }
    }

    private static func read(_ path: String, for option: String) throws(CommandFailure) -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure(description: "\(option) \(path): cannot read it (missing, or not a readable file)")
        }
        return data
    }
}
