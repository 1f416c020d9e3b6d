/// One `bytes=` range from a Range header (RFC 9110 14.1.2). Several ranges are not supported
/// (the header is then ignored and the whole body served).
enum ByteRange: Equatable {
    /// `A-B`, both inclusive.
    case closed(Int, Int)
    /// `A-`.
    case from(Int)
    /// `-S`: the last S bytes.
    case suffix(Int)

    init?(parsing header: String) {
        let trimmed = header.trimmed(of: " \t")
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst("bytes=".count).trimmed(of: " \t")
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let start = spec[..<dash].trimmed(of: " \t")
        let end = spec[spec.index(after: dash)...].trimmed(of: " \t")
        switch (Int(start), Int(end)) {
        case (let a?, let b?) where a >= 0 && b >= a && !start.hasPrefix("+"):
            self = .closed(a, b)
        case (let a?, nil) where a >= 0 && end.isEmpty && !start.hasPrefix("+"):
            self = .from(a)
        case (nil, let s?) where start.isEmpty && s >= 0 && !end.hasPrefix("+"):
            self = .suffix(s)
        default:
            return nil
        }
    }

    /// The satisfiable byte offsets in a body of `length` bytes, or nil (416).
    func resolve(length: Int) -> Range<Int>? {
        switch self {
        case .closed(let a, let b):
            return a < length ? a..<min(b + 1, length) : nil
        case .from(let a):
            return a < length ? a..<length : nil
        case .suffix(let s):
            return s > 0 && length > 0 ? max(0, length - s)..<length : nil
        }
    }
}
