internal import CSupport
import Foundation

/// An upload body in memory that the engine borrows (`cr_borrowed_body_t`) instead of copying it at submit: curl's
/// upload buffer is filled from the `Data`'s own bytes by the engine's C code, so no Swift runs inside curl's read
/// callback and a large body in flight costs no second copy.
///
/// The engine holds one retain from a successful submit until it calls `release`, once, before the transfer's
/// COMPLETE event. `Sendable` because it holds only an immutable `Data`.
final class EngineBorrowedBody: Sendable {
    /// Bodies up to this size are copied by the engine at submit: a copy of a few KiB costs less than the retain
    /// and release, and a `Data` of 14 bytes or fewer keeps its bytes inline, where no pointer to them outlives
    /// `withUnsafeBytes`.
    static let smallestBorrowed = 16 * 1024

    let data: Data

    private init(_ data: Data) {
        self.data = data
    }

    /// A `cr_borrowed_body_t` holding one retain of a new owner of `data`, or nil when `data` is small enough to
    /// be copied (``smallestBorrowed``). Pass it to exactly one successful `cr_engine_submit`, or give the retain
    /// back with ``releaseUnsubmitted(_:)``.
    static func retained(_ data: Data) -> cr_borrowed_body_t? {
        guard data.count >= smallestBorrowed else {
            return nil
        }
        let owner = EngineBorrowedBody(data)
        var body = cr_borrowed_body_t()
        // The pointer outlives the closure. That is sound here: a `Data` this large keeps its bytes in a heap
        // storage object that `owner.data` holds; the bytes never move while nobody mutates that storage, and
        // nobody can: `owner.data` is a `let`, and a caller mutating its own copy copies the storage first.
        body.bytes = owner.data.withUnsafeBytes { UnsafeRawPointer($0.baseAddress) }
        body.length = Int64(data.count)
        body.release = releaseEngineBorrowedBody
        body.context = Unmanaged.passRetained(owner).toOpaque()
        return body
    }

    /// Gives back the retain of a body the engine refused.
    static func releaseUnsubmitted(_ body: cr_borrowed_body_t) {
        body.release?(body.context)
    }
}

/// `cr_borrowed_body_t.release`: exactly once per successful submit, on a loop thread.
private let releaseEngineBorrowedBody: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    if let context {
        Unmanaged<EngineBorrowedBody>.fromOpaque(context).release()
    }
}
