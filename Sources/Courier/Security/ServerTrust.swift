internal import CSupport
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The authentication method of a server-trust challenge: Apple's `NSURLAuthenticationMethodServerTrust`, which
/// FoundationNetworking marks unavailable on Linux (same string).
public let URLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"

/// A TLS server as a new connection found it: its certificate chain and whether it verified against the session's
/// certificate authorities and the host name. Offered with a server-trust challenge
/// (`challenge.protectionSpace.serverTrustDetails`); answer `.useCredential` with `URLCredential(trust:)` to
/// accept this server (by its public key) for the session, `.performDefaultHandling` to let the verification decide,
/// or `.cancelAuthenticationChallenge` to fail the task.
public struct ServerTrust: Sendable, Hashable {
    /// The server's host and port.
    public let host: String
    public let port: Int
    /// The chain the server sent, leaf first, each certificate in DER.
    public let certificates: [Data]
    /// OpenSSL's verification result (`X509_V_ERR_*`): 0 when the chain verified against the session's certificate
    /// authorities and the certificate names the host.
    public let verificationResult: Int

    /// Whether the default handling accepts this server: the chain verified and names the host.
    public var isTrusted: Bool { verificationResult == 0 }

    /// Why the verification failed, in words; nil when it passed.
    public var verificationFailure: String? {
        switch verificationResult {
        case 0: nil
        case 2, 20: "the certificate's issuer is not a trusted certificate authority"
        case 9: "the certificate is not valid yet"
        case 10: "the certificate has expired"
        case 18: "the certificate is self-signed"
        case 19: "the chain ends in a self-signed certificate that is not trusted"
        case 21: "the leaf certificate cannot be verified"
        case 62: "the certificate does not name this host"
        default: "the certificate did not verify (X509 error \(verificationResult))"
        }
    }

    /// The SHA-256 of each certificate's SubjectPublicKeyInfo, base64: the values
    /// ``SessionConfiguration/pinnedPublicKeys`` takes, as `openssl x509 -pubkey -noout | openssl pkey -pubin -outform
    /// der | openssl dgst -sha256 -binary | base64` prints them. Empty strings for certificates that could not be read.
    public var publicKeyHashes: [String] {
        certificates.map { ServerTrust.publicKeyHash(ofCertificate: $0) ?? "" }
    }

    package init(host: String, port: Int, certificates: [Data], verificationResult: Int) {
        self.host = host
        self.port = port
        self.certificates = certificates
        self.verificationResult = verificationResult
    }

    /// The base64 SHA-256 of a DER certificate's SubjectPublicKeyInfo, or nil when it is not a certificate.
    package static func publicKeyHash(ofCertificate der: Data) -> String? {
        guard let info = DER.subjectPublicKeyInfo(ofCertificate: [UInt8](der)) else {
            return nil
        }
        var digest = [UInt8](repeating: 0, count: 64)
        let length = info.withUnsafeBytes { bytes in
            cr_bytes_digest(bytes.baseAddress, bytes.count, CR_DIGEST_SHA256, &digest)
        }
        return length == 32 ? Data(digest.prefix(32)).base64EncodedString() : nil
    }
}

/// Just enough DER to find a certificate's SubjectPublicKeyInfo (RFC 5280: Certificate → tbsCertificate → its
/// seventh element, or sixth without the explicit version).
enum DER {
    /// The element at `offset`: its tag, where its content starts, and where it ends.
    private static func element(_ bytes: [UInt8], at offset: Int) -> (tag: UInt8, content: Int, end: Int)? {
        guard offset + 2 <= bytes.count else {
            return nil
        }
        let tag = bytes[offset]
        var length = Int(bytes[offset + 1])
        var content = offset + 2
        if length & 0x80 != 0 {
            let count = length & 0x7f
            guard count >= 1, count <= 4, content + count <= bytes.count else {
                return nil
            }
            length = bytes[content..<content + count].reduce(0) { $0 << 8 | Int($1) }
            content += count
        }
        guard content + length <= bytes.count else {
            return nil
        }
        return (tag, content, content + length)
    }

    static func subjectPublicKeyInfo(ofCertificate bytes: [UInt8]) -> [UInt8]? {
        guard let certificate = element(bytes, at: 0), certificate.tag == 0x30,
            let tbs = element(bytes, at: certificate.content), tbs.tag == 0x30
        else {
            return nil
        }
        var offset = tbs.content
        var index = 0
        while offset < tbs.end, let field = element(bytes, at: offset) {
            // [0] version, serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
            if index == 0 && field.tag != 0xa0 {
                index = 1
            }
            if index == 6 {
                return field.tag == 0x30 ? Array(bytes[offset..<field.end]) : nil
            }
            offset = field.end
            index += 1
        }
        return nil
    }
}

/// The protection space of a server-trust challenge, which carries the server's chain.
///
/// `@unchecked Sendable`: `details` is a let of a Sendable value; the superclass's state is set once in its
/// initializer and only read after.
final class ServerTrustProtectionSpace: URLProtectionSpace, @unchecked Sendable {
    let details: ServerTrust

    init(_ details: ServerTrust, scheme: String?) {
        self.details = details
        super.init(
            host: details.host,
            port: details.port,
            protocol: scheme,
            realm: nil,
            authenticationMethod: URLAuthenticationMethodServerTrust
        )
    }

    required init?(coder aDecoder: NSCoder) {
        nil
    }
}

extension URLProtectionSpace {
    /// The server's chain and verification of a server-trust challenge
    /// (``URLAuthenticationMethodServerTrust``); nil for other challenges. Apple's `serverTrust`, as a value.
    public var serverTrustDetails: ServerTrust? {
        (self as? ServerTrustProtectionSpace)?.details
    }
}

extension URLCredential {
    /// The credential that accepts the server of a server-trust challenge (answered with `.useCredential`): the
    /// session then talks to that server, by its public key, whatever its verification said.
    public convenience init(trust: ServerTrust) {
        self.init(user: "", password: "", persistence: .forSession)
    }
}
