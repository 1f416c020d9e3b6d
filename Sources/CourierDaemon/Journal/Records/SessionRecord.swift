package import Courier
import Foundation

/// The journal's record of a background session's configuration, as its app last opened it (the `openSession`
/// message without its request number).
///
/// Form 2: `v` and the configuration's fields. Form 1 (the `openSession` message as it was journaled whole) has the
/// same fields and a request number, which is not kept.
package struct SessionRecord: JournalRecord {
    package static let form = 2

    package var configuration: IPCMessage.OpenSession

    package init(_ configuration: IPCMessage.OpenSession) {
        self.configuration = configuration
    }

    private enum CodingKeys: String, CodingKey {
        case form = "v"
        case identifier, sendsLaunchEvents, isDiscretionary, allowsExpensiveNetworkAccess, resourceTimeout
        case requestTimeout, additionalHeaders, maximumConnectionsPerHost, trustedCertificatesPEM
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.form, forKey: .form)
        try container.encode(configuration.identifier, forKey: .identifier)
        try container.encode(configuration.sendsLaunchEvents, forKey: .sendsLaunchEvents)
        try container.encode(configuration.isDiscretionary, forKey: .isDiscretionary)
        try container.encode(configuration.allowsExpensiveNetworkAccess, forKey: .allowsExpensiveNetworkAccess)
        try container.encode(configuration.resourceTimeout, forKey: .resourceTimeout)
        try container.encode(configuration.requestTimeout, forKey: .requestTimeout)
        try container.encode(configuration.additionalHeaders, forKey: .additionalHeaders)
        try container.encodeIfPresent(configuration.maximumConnectionsPerHost, forKey: .maximumConnectionsPerHost)
        try container.encodeIfPresent(configuration.trustedCertificatesPEM, forKey: .trustedCertificatesPEM)
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        _ = try Self.form(of: container, key: .form)
        configuration = IPCMessage.OpenSession(
            request: 0,
            identifier: try container.decode(String.self, forKey: .identifier),
            sendsLaunchEvents: try container.decode(Bool.self, forKey: .sendsLaunchEvents),
            isDiscretionary: try container.decode(Bool.self, forKey: .isDiscretionary),
            allowsExpensiveNetworkAccess: try container.decode(Bool.self, forKey: .allowsExpensiveNetworkAccess),
            resourceTimeout: try container.decode(Double.self, forKey: .resourceTimeout),
            requestTimeout: try container.decode(Double.self, forKey: .requestTimeout),
            additionalHeaders: try container.decode([String: String].self, forKey: .additionalHeaders),
            maximumConnectionsPerHost: try container.decodeIfPresent(Int.self, forKey: .maximumConnectionsPerHost),
            trustedCertificatesPEM: try container.decodeIfPresent(Data.self, forKey: .trustedCertificatesPEM)
        )
    }
}
