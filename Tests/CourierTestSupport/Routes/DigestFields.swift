import Crypto
import Foundation
import NIOHTTP1

/// `announce=FIELD:ALGORITHM` on `/bytes`: the response announces the whole entity's digest in `FIELD`
/// (`repr-digest` and `content-digest` as RFC 9530 writes them, `sha-256=:BASE64:`; `digest` as RFC 3230 does,
/// `SHA-256=BASE64`) with ALGORITHM `sha-256` or `sha-512`; `wrongDigest=1` announces a digest one bit off.
enum DigestFields {
    static func add(to headers: inout HTTPHeaders, _ request: ReceivedRequest, count: Int, seed: Int) {
        guard let option = request.queryValue("announce"), let colon = option.firstIndex(of: ":") else {
            return
        }
        let field = String(option[..<colon]).lowercased()
        let algorithm = String(option[option.index(after: colon)...]).lowercased()
        let body = TestServer.bytes(count: count, seed: seed)
        var digest = algorithm == "sha-512" ? Data(SHA512.hash(data: body)) : Data(SHA256.hash(data: body))
        if request.queryFlag("wrongDigest") {
            digest[0] ^= 1
        }
        let base64 = digest.base64EncodedString()
        switch field {
        case "digest":
            headers.add(name: "Digest", value: "\(algorithm.uppercased())=\(base64)")
        case "content-digest":
            headers.add(name: "Content-Digest", value: "\(algorithm)=:\(base64):")
        default:
            headers.add(name: "Repr-Digest", value: "\(algorithm)=:\(base64):")
        }
    }
}
