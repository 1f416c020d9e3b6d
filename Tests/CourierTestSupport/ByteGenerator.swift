import NIOCore

/// The deterministic byte stream behind `/bytes`: byte `i` of seed `s` depends only on `s` and `i`,
/// so any range can be produced without producing what comes before it.
enum ByteGenerator {
    /// The 64-bit word holding bytes `8 * index ..< 8 * index + 8` (little-endian), from SplitMix64.
    @inline(__always)
    static func word(seed: Int, index: Int) -> UInt64 {
        var z = UInt64(bitPattern: Int64(seed)) &+ (UInt64(bitPattern: Int64(index)) &+ 1) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Fills `buffer` with the bytes at `offset ..< offset + buffer.count` of the stream for `seed`.
    static func fill(seed: Int, offset: Int, into buffer: UnsafeMutableRawBufferPointer) {
        guard buffer.count > 0 else { return }
        var position = offset
        var word = Self.word(seed: seed, index: position >> 3)
        for i in 0..<buffer.count {
            let shift = position & 7
            if shift == 0 && i > 0 {
                word = Self.word(seed: seed, index: position >> 3)
            }
            buffer[i] = UInt8(truncatingIfNeeded: word >> (UInt64(shift) * 8))
            position += 1
        }
    }

    /// The bytes at `offset ..< offset + count` of the stream for `seed`, as a buffer.
    static func buffer(seed: Int, offset: Int, count: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
            fill(seed: seed, offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: pointer[0..<count]))
            return count
        }
        return buffer
    }
}
