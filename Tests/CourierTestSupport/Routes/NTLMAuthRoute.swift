import Crypto
import Foundation

/// `GET /ntlm-auth/USER/PASS`: NTLM (MS-NLMP) as a Windows server answers it, checked for real: 401 with
/// `WWW-Authenticate: NTLM` to a request without it; to a NEGOTIATE message, 401 with a CHALLENGE (a server
/// challenge and target information, so the client answers with NTLMv2); to an AUTHENTICATE message whose user is
/// USER and whose NTLMv2 proof was made from PASS, 200 JSON `{"authenticated":true,"user":USER}`; else 401 again. The
/// three requests must come on one connection, as NTLM authenticates connections (the route keeps no state: its
/// server challenge is fixed).
enum NTLMAuthRoute {
    static let serverChallenge: [UInt8] = Array("courier!".utf8)
    static let domain = "COURIER"

    static func respond(to request: ReceivedRequest) -> ResponsePlan {
        let user = request.pathSegments[1]
        let password = request.pathSegments[2]
        guard let header = request.header("Authorization"), header.lowercased().hasPrefix("ntlm "),
            let message = Data(base64Encoded: String(header.dropFirst(5)).trimmed(of: " \t")).map(Array.init),
            message.count >= 12, message.starts(with: Array("NTLMSSP\0".utf8))
        else {
            return challenge(nil)
        }
        switch little32(message, 8) {
        case 1:
            return challenge(challengeMessage())
        case 3:
            guard authenticates(message, user: user, password: password) else {
                return challenge(nil)
            }
            return .json(.object([("authenticated", .bool(true)), ("user", .string(user))]))
        default:
            return challenge(nil)
        }
    }

    private static func challenge(_ message: [UInt8]?) -> ResponsePlan {
        var plan = ResponsePlan.json(.object([("authenticated", .bool(false))]), status: .unauthorized)
        plan.headers.add(
            name: "WWW-Authenticate",
            value: message.map { "NTLM " + Data($0).base64EncodedString() } ?? "NTLM"
        )
        return plan
    }

    /// The CHALLENGE message: flags (Unicode, NTLM, extended session security, target info), the server challenge,
    /// and target information (the NetBIOS domain name).
    private static func challengeMessage() -> [UInt8] {
        let targetInfo = [UInt8](le16(2)) + le16(domain.utf16.count * 2) + utf16(domain) + le16(0) + le16(0)
        let flags: UInt32 = 0x0000_0001 | 0x0000_0004 | 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0080_0000
        var message = Array("NTLMSSP\0".utf8) + le32(2)
        message += le16(0) + le16(0) + le32(48)  // target name: empty
        message += le32(flags) + serverChallenge + [UInt8](repeating: 0, count: 8)
        message += le16(targetInfo.count) + le16(targetInfo.count) + le32(48)
        return message + targetInfo
    }

    /// Whether an AUTHENTICATE message names `user` and proves `password` (NTLMv2: HMAC-MD5 of the server challenge
    /// and the client's blob under NTOWFv2).
    private static func authenticates(_ message: [UInt8], user: String, password: String) -> Bool {
        guard let ntResponse = field(message, at: 20), ntResponse.count > 16,
            let domainBytes = field(message, at: 28), let userBytes = field(message, at: 36)
        else {
            return false
        }
        let sentUser = String(decoding: stride(from: 0, to: userBytes.count - 1, by: 2).map {
            UInt16(userBytes[$0]) | UInt16(userBytes[$0 + 1]) << 8
        }, as: UTF16.self)
        guard sentUser.lowercased() == user.lowercased() else {
            return false
        }
        let ntHash = MD4.hash(utf16(password))
        let identity = utf16(sentUser.uppercased()) + domainBytes
        let ntowf = Array(HMAC<Insecure.MD5>.authenticationCode(for: identity, using: SymmetricKey(data: ntHash)))
        let proof = Array(ntResponse.prefix(16))
        let blob = Array(ntResponse.dropFirst(16))
        let expected = HMAC<Insecure.MD5>.authenticationCode(
            for: serverChallenge + blob,
            using: SymmetricKey(data: ntowf)
        )
        return Array(expected) == proof
    }

    /// The bytes of the security buffer whose fields (length, allocated, offset) start at `offset`.
    private static func field(_ message: [UInt8], at offset: Int) -> [UInt8]? {
        guard message.count >= offset + 8 else {
            return nil
        }
        let length = Int(message[offset]) | Int(message[offset + 1]) << 8
        let start = Int(little32(message, offset + 4))
        guard start + length <= message.count else {
            return nil
        }
        return Array(message[start..<start + length])
    }

    private static func little32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard bytes.count >= offset + 4 else {
            return 0
        }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    private static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xff), UInt8(value >> 8 & 0xff)] }
    private static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xff) } }
    private static func utf16(_ text: String) -> [UInt8] { text.utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] } }
}

/// MD4 (RFC 1320), which NTLM's NT hash needs and swift-crypto does not offer.
public enum MD4 {
    public static func hash(_ input: [UInt8]) -> [UInt8] {
        var message = input + [0x80]
        while message.count % 64 != 56 {
            message.append(0)
        }
        let bits = UInt64(input.count) * 8
        message += (0..<8).map { UInt8(bits >> (8 * $0) & 0xff) }
        var (a, b, c, d): (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
        func rotate(_ x: UInt32, _ s: UInt32) -> UInt32 { x << s | x >> (32 - s) }
        for block in stride(from: 0, to: message.count, by: 64) {
            let x = (0..<16).map { i in
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(message[block + 4 * i + $1]) << (8 * $1) }
            }
            let (aa, bb, cc, dd) = (a, b, c, d)
            let f = { (x: UInt32, y: UInt32, z: UInt32) in (x & y) | (~x & z) }
            let g = { (x: UInt32, y: UInt32, z: UInt32) in (x & y) | (x & z) | (y & z) }
            let h = { (x: UInt32, y: UInt32, z: UInt32) in x ^ y ^ z }
            for i in 0..<16 {
                let s: [UInt32] = [3, 7, 11, 19]
                let value = rotate(a &+ f(b, c, d) &+ x[i], s[i % 4])
                (a, b, c, d) = (d, value, b, c)
            }
            for i in 0..<16 {
                let s: [UInt32] = [3, 5, 9, 13]
                let k = (i % 4) * 4 + i / 4
                let value = rotate(a &+ g(b, c, d) &+ x[k] &+ 0x5a82_7999, s[i % 4])
                (a, b, c, d) = (d, value, b, c)
            }
            let order = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]
            for i in 0..<16 {
                let s: [UInt32] = [3, 9, 11, 15]
                let value = rotate(a &+ h(b, c, d) &+ x[order[i]] &+ 0x6ed9_eba1, s[i % 4])
                (a, b, c, d) = (d, value, b, c)
            }
            (a, b, c, d) = (a &+ aa, b &+ bb, c &+ cc, d &+ dd)
        }
        return [a, b, c, d].flatMap { word in (0..<4).map { UInt8(word >> (8 * $0) & 0xff) } }
    }
}
