public import Foundation

extension TestServer {
    /// The body `/bytes/<count>?seed=<seed>` serves: `count` deterministic pseudo-random bytes.
    ///
    /// The same `(count, seed)` always gives the same bytes, and a shorter count gives a prefix of a
    /// longer one, so a range `A-B` of the body is `bytes(count: N, seed: S)[A...B]`.
    /// - Parameters:
    ///   - count: how many bytes (negative counts give no bytes).
    ///   - seed: selects the stream; `/bytes` uses 0 when the query has no `seed`.
    public static func bytes(count: Int, seed: Int = 0) -> Data {
        let count = max(0, count)
        var data = Data(count: count)
        data.withUnsafeMutableBytes { pointer in
            ByteGenerator.fill(seed: seed, offset: 0, into: pointer)
        }
        return data
    }
}
