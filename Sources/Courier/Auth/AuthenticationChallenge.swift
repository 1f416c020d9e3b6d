import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The schemes Courier answers, parsed from `WWW-Authenticate` / `Proxy-Authenticate`.
struct AuthenticationOffer: Codable, Sendable, Equatable {
    enum Scheme: Codable, Sendable, Equatable {
        case basic
        case digest
        /// NTLM and Negotiate: connection-based handshakes libcurl carries out once the delegate gave a credential.
        case ntlm
        case negotiate
    }

    var scheme: Scheme
    var realm: String?

    /// The preferred offer of a challenge header value: Negotiate, NTLM, Digest, then Basic (the most secure first,
    /// as curl's `--anyauth`); nil when none is offered.
    static func best(in headerValue: String) -> AuthenticationOffer? {
        var offers: [AuthenticationOffer] = []
        // Challenges may be comma-separated within one value; a new challenge starts with a bare token.
        let lower = headerValue.lowercased()
        let schemes = [(Scheme.negotiate, "negotiate"), (.ntlm, "ntlm"), (.digest, "digest"), (.basic, "basic")]
        for (scheme, token) in schemes {
            var searchStart = lower.startIndex
            while let range = lower.range(of: token, range: searchStart..<lower.endIndex) {
                let atStart =
                    range.lowerBound == lower.startIndex
                    || [" ", ","].contains(lower[lower.index(before: range.lowerBound)])
                let followed = range.upperBound == lower.endIndex || lower[range.upperBound] == " "
                if atStart && followed {
                    let rest = String(headerValue[range.upperBound...])
                    offers.append(AuthenticationOffer(scheme: scheme, realm: realm(in: rest)))
                    break
                }
                searchStart = range.upperBound
            }
        }
        return offers.first
    }

    private static func realm(in parameters: String) -> String? {
        guard let range = parameters.range(of: "realm=", options: .caseInsensitive) else {
            return nil
        }
        var rest = parameters[range.upperBound...]
        if rest.hasPrefix("\"") {
            rest = rest.dropFirst()
            return String(rest.prefix { $0 != "\"" })
        }
        return String(rest.prefix { $0 != "," && $0 != " " })
    }

    var authenticationMethod: String {
        switch scheme {
        case .basic: NSURLAuthenticationMethodHTTPBasic
        case .digest: NSURLAuthenticationMethodHTTPDigest
        case .ntlm: NSURLAuthenticationMethodNTLM
        case .negotiate: NSURLAuthenticationMethodNegotiate
        }
    }
}

/// The `sender` of the challenges Courier builds. Dispositions travel through the delegate's completion
/// handler, so every sender method is a no-op.
final class ChallengeSender: NSObject, URLAuthenticationChallengeSender, Sendable {
    static let shared = ChallengeSender()

    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}
