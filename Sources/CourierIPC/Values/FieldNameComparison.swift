extension String {
    /// ASCII case-insensitive equality, for header field names (tokens, RFC 9110): no Unicode case mapping and
    /// no allocation, unlike comparing `lowercased()` strings.
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        let lhs = utf8
        let rhs = other.utf8
        guard lhs.count == rhs.count else {
            return false
        }
        return zip(lhs, rhs).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20))
        }
    }
}
