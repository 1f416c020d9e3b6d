package import Foundation

/// How one hop connects beyond its URL (`cr_connection_t`): who admits a TLS server, the TLS versions, the client's
/// certificate, and where the connection goes. Built from the session's configuration (and its decisions about
/// servers) for each hop; journaled with a background task's spec, so courierd's attempts connect as the app's would.
package struct ConnectionOptions: Codable, Sendable, Equatable {
    /// Whose judgment admits the server of a TLS connection.
    package enum Trust: Codable, Sendable, Equatable {
        /// The engine verifies the chain and the host name (`CR_TRUST_VERIFY`).
        case verify
        /// Stop before the request on each new connection and report its chain (`CR_TRUST_ASK`): the session's
        /// delegate decides.
        case ask
        /// Read the chain of a server that failed ``ask``'s verification (`CR_TRUST_PROBE`): stop before the
        /// request, verifying nothing.
        case probe
        /// The delegate accepted the server whose key is pinned, whatever the verification says
        /// (`CR_TRUST_ACCEPTED`).
        case accepted
    }

    /// A client certificate and its key, in the form libcurl reads.
    package struct ClientCertificate: Codable, Sendable, Equatable {
        package enum Format: String, Codable, Sendable {
            case pem = "PEM"
            case pkcs12 = "P12"
        }

        package var format: Format
        /// The certificate (PEM: with its chain, and the key when ``key`` is nil; PKCS#12: everything).
        package var certificate: Data
        /// The private key, PEM, when it is not in ``certificate``.
        package var key: Data?
        package var password: String?

        package init(format: Format, certificate: Data, key: Data? = nil, password: String? = nil) {
            self.format = format
            self.certificate = certificate
            self.key = key
            self.password = password
        }
    }

    package var trust: Trust = .verify
    /// SHA-256 hashes of SubjectPublicKeyInfo, base64: the server's key must be one of them.
    package var pinnedPublicKeys: [String] = []
    /// 10...13 for TLS 1.0...1.3; nil for libcurl's default.
    package var tlsMinimum: Int?
    package var tlsMaximum: Int?
    package var clientCertificate: ClientCertificate?
    /// The client certificate for a TLS connection to an HTTPS proxy.
    package var proxyClientCertificate: ClientCertificate?
    package var unixSocketPath: String?
    /// curl's `--resolve` entries: `host:port:address[,address…]`.
    package var resolve: [String] = []
    /// 4 or 6: connect over that family only.
    package var ipVersion: Int?
    package var interface: String?
    package var dnsOverHTTPSURL: String?

    package init() {}

    /// Nothing set: the hop needs no options (`cr_request_t.connection` stays NULL).
    package var isDefault: Bool { self == ConnectionOptions() }

    /// `sha256//<base64>;…`, curl's form of ``pinnedPublicKeys``; nil for none.
    package var curlPinnedPublicKeys: String? {
        pinnedPublicKeys.isEmpty ? nil : pinnedPublicKeys.map { "sha256//" + $0 }.joined(separator: ";")
    }
}

/// A server's certificate chain and the verification's verdict, from a hop that stopped before its request for the
/// delegate to decide (``ConnectionOptions/Trust/ask``).
package struct PeerTrustReport: Codable, Sendable, Equatable {
    /// The chain as the server sent it, leaf first, DER; empty when it failed to verify (the TLS library keeps
    /// none then: a probe reads it).
    package var certificates: [Data]
    /// OpenSSL's `X509_V_ERR` code of the verification against the session's CAs and the host name; 0 when it
    /// passed; -1 from a probe (``ConnectionOptions/Trust/probe``), which verifies nothing.
    package var verifyResult: Int

    package init(certificates: [Data], verifyResult: Int) {
        self.certificates = certificates
        self.verifyResult = verifyResult
    }

    /// The DER certificates of PEM `CERTIFICATE` blocks, in order.
    package static func certificates(fromPEM text: String) -> [Data] {
        var certificates: [Data] = []
        var base64: String?
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("-----BEGIN CERTIFICATE-----") {
                base64 = ""
            } else if line.hasPrefix("-----END CERTIFICATE-----") {
                if let body = base64, let der = Data(base64Encoded: body) {
                    certificates.append(der)
                }
                base64 = nil
            } else if base64 != nil {
                base64! += line.trimmingCharacters(in: .whitespaces)
            }
        }
        return certificates
    }
}
