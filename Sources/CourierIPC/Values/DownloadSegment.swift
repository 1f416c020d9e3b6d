/// One range of a segmented download's file (``TransferSpec/segments``): bytes `start..<end` of the entity, of which
/// the first `done` are on disk. A download's segments cover its file exactly, in order.
package struct DownloadSegment: Codable, Sendable, Equatable {
    package var start: Int64
    package var end: Int64
    package var done: Int64

    package init(start: Int64, end: Int64, done: Int64 = 0) {
        self.start = start
        self.end = end
        self.done = done
    }

    package var isComplete: Bool {
        start + done >= end
    }

    /// The smallest segment worth its own connection.
    package static let minimumLength: Int64 = 1 << 20
    /// The most connections one download uses.
    package static let maximumCount = 16

    /// `length` bytes in up to `count` segments of at least ``minimumLength`` each (one when `length` is smaller);
    /// the first ones take the remainder.
    package static func split(length: Int64, count: Int) -> [DownloadSegment] {
        let pieces = Int64(max(1, min(count, maximumCount, Int(max(1, length / minimumLength)))))
        let size = length / pieces
        let remainder = length % pieces
        var segments: [DownloadSegment] = []
        var start: Int64 = 0
        for index in 0..<pieces {
            let end = start + size + (index < remainder ? 1 : 0)
            segments.append(DownloadSegment(start: start, end: end))
            start = end
        }
        return segments
    }

    /// The bytes on disk from offset 0 with no gap.
    package static func contiguousPrefix(_ segments: [DownloadSegment]) -> Int64 {
        var prefix: Int64 = 0
        for segment in segments.sorted(by: { $0.start < $1.start }) {
            guard segment.start == prefix else {
                break
            }
            prefix = segment.start + segment.done
            guard segment.isComplete else {
                break
            }
        }
        return prefix
    }

    /// All the bytes on disk, gaps or not.
    package static func bytesOnDisk(_ segments: [DownloadSegment]) -> Int64 {
        segments.reduce(0) { $0 + min($1.done, $1.end - $1.start) }
    }
}
