public import Foundation
import Crypto
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A certificate authority made at test time (P-256, swift-certificates), with a server leaf it
/// signed for `127.0.0.1`, `::1` and `localhost`.
///
/// Give ``pemFile`` to the client as its CA bundle (libcurl `CURLOPT_CAINFO`, `curl --cacert`), or
/// ``pem`` where the bytes are wanted. Nothing here is trusted by the system.
public struct TestCertificateAuthority: Sendable {
    /// A certificate and its private key, both PEM encoded.
    public struct Leaf: Sendable {
        /// The certificate (one `CERTIFICATE` block).
        public let certificatePEM: Data

        /// Its PKCS#8 private key (`PRIVATE KEY` block).
        public let privateKeyPEM: Data
    }

    /// The CA certificate, PEM encoded.
    public let pem: Data

    /// A temporary file holding ``pem``, written by ``make()``.
    public let pemFile: URL

    /// The server leaf for `127.0.0.1`, `::1` and `localhost`, signed by this CA.
    public let leaf: Leaf

    /// The CA's private key, PEM encoded (kept to sign further leaves).
    let privateKeyPEM: String

    /// The CA's distinguished name.
    let name: DistinguishedName

    /// Makes a fresh CA and a leaf for `127.0.0.1`, `::1` and `localhost`, and writes ``pem`` to ``pemFile``.
    public static func make() throws -> TestCertificateAuthority {
        try make(key: P256.Signing.PrivateKey(), commonName: "Courier Test CA \(UInt32.random(in: 0...UInt32.max))")
    }

    /// A CA of `key` named `commonName`, and its leaf.
    private static func make(key: P256.Signing.PrivateKey, commonName: String) throws -> TestCertificateAuthority {
        let certificateKey = Certificate.PrivateKey(key)
        let name = try DistinguishedName {
            OrganizationName("Courier Tests")
            CommonName(commonName)
        }
        let now = Date()
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: certificateKey.publicKey)
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: certificateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(30 * 24 * 3600),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: certificateKey
        )
        let pem = Data(try certificate.serializeAsPEM().pemString.utf8)
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("courier-test-ca-\(UUID().uuidString).pem")
        try pem.write(to: file)

        let partial = TestCertificateAuthority(
            pem: pem,
            pemFile: file,
            leaf: Leaf(certificatePEM: Data(), privateKeyPEM: Data()),
            privateKeyPEM: key.pemRepresentation,
            name: name
        )
        let leaf = try partial.makeLeaf(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
        return TestCertificateAuthority(
            pem: pem,
            pemFile: file,
            leaf: leaf,
            privateKeyPEM: partial.privateKeyPEM,
            name: name
        )
    }

    /// The SHA-256 of a PEM certificate's SubjectPublicKeyInfo, base64 (a public-key pin), computed with
    /// swift-certificates and swift-crypto.
    public static func publicKeyHash(ofCertificatePEM pem: Data) throws -> String {
        let certificate = try Certificate(pemEncoded: String(decoding: pem, as: UTF8.self))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate.publicKey)
        return Data(SHA256.hash(data: serializer.serializedBytes)).base64EncodedString()
    }

    /// Signs a new leaf (P-256, `serverAuth` and `clientAuth`: a server's, or a client's for mutual TLS) with this
    /// CA.
    /// - Parameters:
    ///   - dnsNames: DNS subject alternative names.
    ///   - ipAddresses: IPv4 or IPv6 literals for IP subject alternative names.
    ///   - notValidBefore: start of validity (default: an hour ago).
    ///   - notValidAfter: end of validity (default: in 30 days).
    public func makeLeaf(
        dnsNames: [String],
        ipAddresses: [String] = [],
        notValidBefore: Date = Date().addingTimeInterval(-3600),
        notValidAfter: Date = Date().addingTimeInterval(30 * 24 * 3600)
    ) throws -> Leaf {
        let issuerKey = Certificate.PrivateKey(try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM))
        let key = P256.Signing.PrivateKey()
        let certificateKey = Certificate.PrivateKey(key)
        let subject = try DistinguishedName {
            OrganizationName("Courier Tests")
            CommonName(dnsNames.first ?? ipAddresses.first ?? "courier-test-leaf")
        }
        let addresses = try ipAddresses.map { literal in
            guard let bytes = Self.ipAddressBytes(literal) else {
                throw TestCertificateAuthorityError.invalidIPAddress(literal)
            }
            return bytes
        }
        let alternativeNames = Certificate.Extension(
            oid: .X509ExtensionID.subjectAlternativeName,
            critical: false,
            value: Self.subjectAlternativeNamesDER(dnsNames: dnsNames, ipAddresses: addresses)[...]
        )
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
            try ExtendedKeyUsage([.serverAuth, .clientAuth])
            SubjectKeyIdentifier(hash: certificateKey.publicKey)
            AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuerKey.publicKey).keyIdentifier)
            alternativeNames
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: certificateKey.publicKey,
            notValidBefore: notValidBefore,
            notValidAfter: notValidAfter,
            issuer: name,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: issuerKey
        )
        return Leaf(
            certificatePEM: Data(try certificate.serializeAsPEM().pemString.utf8),
            privateKeyPEM: Data(key.pemRepresentation.utf8)
        )
    }

    /// The one CA of the HTTP/2 pass: the servers it starts (``TestServer/Configuration/sharedAuthority``) are signed
    /// by it, so that a session can trust them before they start. Made anew at each call from one fixed key and name
    /// (a certificate verifies against any CA certificate of its issuer's name and key), so that the process keeps
    /// none of it (a static would be memory LeakSanitizer cannot see into). Its ``pemFile`` is deleted at once: use
    /// ``pem``.
    public static func shared() throws -> TestCertificateAuthority {
        // A test key, public here on purpose: it signs only loopback test servers' certificates.
        let key = try P256.Signing.PrivateKey(
            rawRepresentation: Array("courier-test-ca-shared-key-p256!".utf8)
        )
        let authority = try make(key: key, commonName: "Courier Test CA (shared)")
        authority.removeFiles()
        return authority
    }

    /// Deletes ``pemFile``. ``TestServer/shutdown()`` does this for the CA it made.
    public func removeFiles() {
        try? FileManager.default.removeItem(at: pemFile)
    }

    /// The DER of a `GeneralNames` sequence of `dNSName [2]` and `iPAddress [7]` entries (RFC 5280 4.2.1.6).
    static func subjectAlternativeNamesDER(dnsNames: [String], ipAddresses: [[UInt8]]) -> [UInt8] {
        var content: [UInt8] = []
        for dnsName in dnsNames {
            let bytes = Array(dnsName.utf8)
            content += [0x82] + derLength(bytes.count) + bytes
        }
        for address in ipAddresses {
            content += [0x87] + derLength(address.count) + address
        }
        return [0x30] + derLength(content.count) + content
    }

    /// A DER definite length.
    static func derLength(_ length: Int) -> [UInt8] {
        if length < 0x80 {
            return [UInt8(length)]
        }
        var bytes: [UInt8] = []
        var remaining = length
        while remaining > 0 {
            bytes.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// The 4 or 16 network-order bytes of an IP literal, or nil.
    static func ipAddressBytes(_ literal: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}

/// Errors from ``TestCertificateAuthority``.
public enum TestCertificateAuthorityError: Error, Sendable {
    /// The string is not an IPv4 or IPv6 literal.
    case invalidIPAddress(String)
}
