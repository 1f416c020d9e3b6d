import Crypto

/// HTTP Digest access authentication, RFC 7616, `qop="auth"`, with MD5 (or SHA-256 on request).
enum DigestAuth {
    /// The hash named by the `algorithm` parameter.
    enum Algorithm: String {
        case md5 = "MD5"
        case sha256 = "SHA-256"

        init?(parameter: String?) {
            switch parameter?.uppercased() {
            case nil, "MD5": self = .md5
            case "SHA-256": self = .sha256
            default: return nil
            }
        }

        /// The lower-case hex hash of `text`'s UTF-8 bytes.
        func hash(_ text: String) -> String {
            switch self {
            case .md5: return Hex.encode(Insecure.MD5.hash(data: Array(text.utf8)))
            case .sha256: return Hex.encode(SHA256.hash(data: Array(text.utf8)))
            }
        }
    }

    /// The opaque value of every challenge (clients must echo it).
    static let opaque = "636f75726965722d746573742d6f7061717565"

    /// A fresh random nonce (128 bits, hex).
    static func makeNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// The `WWW-Authenticate` value of a challenge.
    static func challenge(realm: String, nonce: String, algorithm: Algorithm, stale: Bool) -> String {
        var value = "Digest realm=\"\(realm)\", qop=\"auth\", algorithm=\(algorithm.rawValue), "
        value += "nonce=\"\(nonce)\", opaque=\"\(opaque)\""
        if stale {
            value += ", stale=true"
        }
        return value
    }

    /// The `response` a client must send (RFC 7616 3.4.1, qop=auth):
    /// `H(H(user:realm:password):nonce:nc:cnonce:qop:H(method:uri))`.
    static func expectedResponse(
        algorithm: Algorithm,
        user: String,
        realm: String,
        password: String,
        method: String,
        uri: String,
        nonce: String,
        nc: String,
        cnonce: String,
        qop: String
    ) -> String {
        let ha1 = algorithm.hash("\(user):\(realm):\(password)")
        let ha2 = algorithm.hash("\(method):\(uri)")
        return algorithm.hash("\(ha1):\(nonce):\(nc):\(cnonce):\(qop):\(ha2)")
    }

    /// The parameters of a `Digest` Authorization header, names lower-cased; nil for another scheme.
    /// Values may be tokens or quoted strings with backslash escapes (RFC 9110 5.6.4).
    static func parseAuthorization(_ header: String) -> [String: String]? {
        var characters = Substring(header)
        while characters.first == " " { characters = characters.dropFirst() }
        guard characters.lowercased().hasPrefix("digest ") else { return nil }
        characters = characters.dropFirst("digest ".count)

        var parameters: [String: String] = [:]
        while true {
            while let first = characters.first, first == " " || first == "\t" || first == "," {
                characters = characters.dropFirst()
            }
            guard !characters.isEmpty else { break }
            guard let equals = characters.firstIndex(of: "=") else { return nil }
            let name = characters[..<equals].trimmed(of: " \t").lowercased()
            characters = characters[characters.index(after: equals)...]
            while characters.first == " " { characters = characters.dropFirst() }
            var value = ""
            if characters.first == "\"" {
                characters = characters.dropFirst()
                var closed = false
                while let character = characters.popFirst() {
                    if character == "\\", let escaped = characters.popFirst() {
                        value.append(escaped)
                    } else if character == "\"" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { return nil }
            } else {
                let end = characters.firstIndex(of: ",") ?? characters.endIndex
                value = characters[..<end].trimmed(of: " \t")
                characters = characters[end...]
            }
            parameters[name] = value
        }
        return parameters
    }
}
