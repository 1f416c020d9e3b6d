public import Foundation
import CourierIPC

/// A client certificate and its private key, which a session presents to servers (and HTTPS proxies) that ask for
/// one during the TLS handshake (mutual TLS): ``SessionConfiguration/clientIdentity``.
///
/// ```swift
/// var configuration = SessionConfiguration.default
/// configuration.clientIdentity = .pem(
///     certificate: try Data(contentsOf: URL(fileURLWithPath: "client.crt")),
///     privateKey: try Data(contentsOf: URL(fileURLWithPath: "client.key"))
/// )
/// ```
public struct ClientIdentity: Sendable, Hashable {
    enum Format: Sendable, Hashable {
        case pem
        case pkcs12
    }

    let format: Format
    let certificate: Data
    let privateKey: Data?
    let password: String?

    /// A certificate (PEM, followed by the intermediates to send) and its private key (PEM; nil when the
    /// certificate data holds it too). `password` decrypts an encrypted key.
    public static func pem(certificate: Data, privateKey: Data? = nil, password: String? = nil) -> ClientIdentity {
        ClientIdentity(format: .pem, certificate: certificate, privateKey: privateKey, password: password)
    }

    /// A PKCS#12 archive (`.p12`, `.pfx`) holding the certificate, its chain and the key, and its password.
    public static func pkcs12(_ data: Data, password: String?) -> ClientIdentity {
        ClientIdentity(format: .pkcs12, certificate: data, privateKey: nil, password: password)
    }
}

extension ClientIdentity {
    /// The identity as the engine takes it.
    var engineCertificate: ConnectionOptions.ClientCertificate {
        ConnectionOptions.ClientCertificate(
            format: format == .pem ? .pem : .pkcs12,
            certificate: certificate,
            key: privateKey,
            password: password
        )
    }
}
