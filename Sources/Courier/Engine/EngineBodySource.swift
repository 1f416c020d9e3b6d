internal import CSupport
import Foundation

/// An upload body the engine reads when curl asks for the next piece (`cr_body_source_t`), so a `Data` body is
/// never copied whole into the engine: curl's upload buffer is filled straight from it.
///
/// The engine holds one retain from a successful submit until it calls `release`, before the transfer's
/// COMPLETE event. `Sendable` because it holds only an immutable `Data`.
final class EngineBodySource: Sendable {
    let data: Data

    init(_ data: Data) {
        self.data = data
    }

    /// A `cr_body_source_t` holding one retain of a new source for `data`. Pass it to exactly one successful
    /// `cr_engine_submit`, or give the retain back with ``releaseUnsubmitted(_:)``.
    static func retained(_ data: Data) -> cr_body_source_t {
        var source = cr_body_source_t()
        source.read = readEngineBodySource
        source.release = releaseEngineBodySource
        source.context = Unmanaged.passRetained(EngineBodySource(data)).toOpaque()
        source.length = Int64(data.count)
        return source
    }

    /// Gives back the retain of a source the engine refused.
    static func releaseUnsubmitted(_ source: cr_body_source_t) {
        source.release?(source.context)
    }
}

/// `cr_body_source_t.read`: runs on a loop thread, once per piece curl sends (and again after a rewind).
private let readEngineBodySource: @convention(c) (UnsafeMutableRawPointer?, Int64, UnsafeMutableRawPointer?, Int)
    -> Void = { context, offset, buffer, length in
        guard let context, let buffer, length > 0 else {
            return
        }
        let data = Unmanaged<EngineBodySource>.fromOpaque(context).takeUnretainedValue().data
        let start = data.startIndex + Int(offset)
        data.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), from: start..<(start + length))
    }

/// `cr_body_source_t.release`: exactly once per successful submit.
private let releaseEngineBodySource: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    if let context {
        Unmanaged<EngineBodySource>.fromOpaque(context).release()
    }
}
