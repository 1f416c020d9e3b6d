import Foundation
import Tracing

/// The part of a task's state that most tasks never set: outcomes decided by Courier rather than the engine,
/// the reported error, the resume-data plumbing, redirects and credentials. ``TaskMachine`` keeps it out of line,
/// so that a task waiting for a connection slot costs a pointer for all of it (Benchmarks/README.md: 100,000 queued
/// tasks). The counters and the credential are `nil` for their common value (no redirect, no credential), so that
/// setting that value needs no box.
struct RareTaskState: Sendable {
    var forcedOutcome: TaskOutcome?
    var pendingOutcome: TaskOutcome?
    var error: CourierError?
    var resumeSource: ResumeData?
    var resumeSourceError: CourierError?
    var resumeDataHandler: (@Sendable (Data?) -> Void)?
    /// The backend reported where it resumed (courierd): `didResumeAtOffset` went out then, not with the response.
    var backendResumed = false
    var redirectCount: Int?
    var authentication: TransferSpec.Authentication?
    var failedAuthentications: Int?
    /// `earliestBeginDate` (background sessions).
    var earliestBeginDate: Date?
    var proxyAuthentication: TransferSpec.Authentication?
    var connectivityFailure: CourierError?
    var toldWaitingForConnectivity: Bool?
    /// `countOfBytesClientExpectsToSend` / `…ToReceive`, when set.
    var clientExpectsToSend: Int64?
    var clientExpectsToReceive: Int64?
    /// The URL cache's part (``TaskMachine/cacheEntryLimit``, ``TaskMachine/revalidating``,
    /// ``TaskMachine/servedEntry``, ``TaskMachine/cacheCandidate``).
    var cacheEntryLimit: Int?
    var revalidating: CacheEntry?
    /// The conditions of the current hop (a revalidation's validators), to submit it again after a server-trust
    /// challenge.
    var hopConditions: [String: String]?
    var servedEntry: CacheEntry?
    var cacheCandidate: CacheCandidate?
    /// A download's expected checksum, and the digest its engine computed of the file.
    var expectedChecksum: Checksum?
    var fileDigest: Checksum?
    /// ``DownloadTask/fileDigestAlgorithm``.
    var fileDigestAlgorithm: Checksum.Algorithm?
    /// ``SessionTask/maximumBytesPerSecond``.
    var maximumBytesPerSecond: Int64?
    /// ``DownloadTask/maximumSegments``, and where the segments of a segmented download stand.
    var maximumSegments: Int?
    var segmentMap: [DownloadSegment]?
    /// ``TaskMachine/uploadResumption``.
    var uploadResumption: UploadResumption?
    /// The task's span, when the session has a tracer (carried for the shell; the machine never reads it).
    var span: (any Span)?
    /// ``SessionTask/delegate``, and ``SessionTask/progress`` once asked for (carried for the shell).
    var ownDelegate: (any SessionTaskDelegate)?
    var progress: Progress?
    /// What supplies the current hop's streamed body (``BodySupplier``; carried for the shell).
    var bodySupplier: (any BodySupplier)?
}

/// ``RareTaskState`` on the heap, allocated the first time a field is set, with value semantics.
struct OutOfLineRareState: Sendable {
    /// `@unchecked Sendable`: the boxed value is `Sendable`, and the box is mutated only while uniquely referenced
    /// (copy on write below), so no two owners ever see one mutation.
    private final class Box: @unchecked Sendable {
        var value: RareTaskState
        init(_ value: RareTaskState) {
            self.value = value
        }
    }

    private var box: Box?
    private static let unset = RareTaskState()

    subscript<Field>(_ field: WritableKeyPath<RareTaskState, Field>) -> Field {
        get {
            // A task that never set a field reads the one empty state, rather than a new one per read.
            guard let box else {
                return Self.unset[keyPath: field]
            }
            return box.value[keyPath: field]
        }
        set {
            if box == nil {
                if let optional = newValue as? any ClearableField, optional.isCleared {
                    return  // clearing a field that was never set: no box needed
                }
                box = Box(RareTaskState())
            } else if !isKnownUniquelyReferenced(&box) {
                box = Box(box!.value)
            }
            box!.value[keyPath: field] = newValue
        }
    }
}

/// Lets ``OutOfLineRareState`` see that a value written to a field is `nil` (every field is optional).
private protocol ClearableField {
    var isCleared: Bool { get }
}

extension Optional: ClearableField {
    fileprivate var isCleared: Bool {
        if case .none = self {
            return true
        }
        return false
    }
}
