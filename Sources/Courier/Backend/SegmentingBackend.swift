import CourierConcurrency
import Foundation
import Synchronization

/// Segmented downloads (aria2's `-s`/`-x`) as a ``TransferBackend`` over the in-process one: a download whose spec
/// asks for segments is one transfer to the task and several ranged transfers to the engine, all writing into the
/// one staging file at their own offsets.
///
/// A fresh download starts as one GET. When its response shows a whole entity of at least two
/// ``DownloadSegment/minimumLength``s that the server serves in byte ranges (`Accept-Ranges: bytes`, a
/// `Content-Length`, a strong validator, no content coding), the entity is split (``DownloadSegment/split``): the
/// first transfer goes on with the first segment and is cut once its bytes are on disk, and one ranged transfer
/// (`Range`, `If-Range`; only a 206 is accepted) starts for each other segment. A server that does not qualify
/// keeps the one transfer. A resumed download (``TransferSpec/segmentMap``, from resume data or courierd's
/// checkpoint) starts one ranged transfer per unfinished segment, from where each stopped.
///
/// The task sees the first transfer's RESPONSE (a resumed one: the first that arrives, as if it resumed at the bytes
/// already on disk), PROGRESS summed over the segments with the segment map (``TransferEvent/Payload/segments``),
/// and one COMPLETE when every segment is done, or the first failure once every segment stopped (its resume data
/// then keeps each segment's bytes). The file's digest is not computed while writing (segments arrive out of
/// order): a checksum is checked by reading the file.
///
/// `@unchecked Sendable`: the downloads live behind `state`'s lock; `inner` and `deliver` are immutable.
final class SegmentingBackend: TransferBackend, @unchecked Sendable {
    private let inner: any TransferBackend
    /// Where events go for the session (synthesised ones included).
    private let deliver: TransferEventHandler

    private struct Download {
        var id: TransferID
        var spec: TransferSpec
        /// The handle the task knows: the first transfer's.
        var logical: UInt64
        /// Empty until the entity is split (a fresh download that did not qualify stays so).
        var segments: [DownloadSegment] = []
        /// Engine transfer → its segment.
        var transfers: [UInt64: Int] = [:]
        /// Bytes each segment's transfer received (for progress).
        var received: [Int: Int64] = [:]
        /// Bytes on disk when the download (re)started.
        var resumedAt: Int64 = 0
        var length: Int64 = -1
        var firstError: CourierError?
        var responded = false
        var metrics: TransferMetrics?
        /// The first transfer is being cut at its segment's end (on purpose, not an error).
        var cutting = false
        /// The segments whose ranged transfer was answered with its range (206). The first transfer is cut only once
        /// every one was: until then the server may still answer a range with the whole entity, and the first
        /// transfer is what fetches everything then.
        var rangesServed: Set<Int> = []

        /// Whether the first transfer can be cut at its segment's end now: its segment is on disk and every other
        /// segment's transfer is known to get its range.
        var firstCanBeCut: Bool {
            !cutting && !segments.isEmpty && segments[0].isComplete && rangesServed.count == segments.count - 1
        }
    }

    private struct State {
        var downloads: [UInt64: Download] = [:]
        /// Engine transfer → the logical handle of its download.
        var owners: [UInt64: UInt64] = [:]
        /// Ranged transfers of a split given up (the server answered a range with the whole entity): their events
        /// are dropped until they end.
        var abandoned: Set<UInt64> = []
    }

    private let state = LockedValue(State())
    /// Whether any download was ever segmented: until then, ``rewrite(_:)`` hands batches through untouched.
    private let everSegmented = Atomic<Bool>(false)

    init(_ inner: any TransferBackend, deliver: @escaping TransferEventHandler) {
        self.inner = inner
        self.deliver = deliver
    }

    // MARK: TransferBackend

    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError> {
        guard spec.segments > 1, case .file = spec.sink, spec.method.uppercased() == "GET", spec.body == .none else {
            return inner.submit(spec, as: id)
        }
        everSegmented.store(true, ordering: .releasing)
        if let map = spec.segmentMap {
            return resume(spec, map: map, as: id)
        }
        return inner.submit(spec, as: id).map { transfer in
            state.withLock { state in
                state.downloads[transfer] = Download(id: id, spec: spec, logical: transfer, transfers: [transfer: 0])
                state.owners[transfer] = transfer
            }
            return transfer
        }
    }

    func cancel(_ transfer: UInt64, producingResumeData: Bool) {
        for engineTransfer in transfers(of: transfer) {
            inner.cancel(engineTransfer, producingResumeData: producingResumeData)
        }
    }

    func pause(_ transfer: UInt64) {
        transfers(of: transfer).forEach(inner.pause)
    }

    func resume(_ transfer: UInt64) {
        transfers(of: transfer).forEach(inner.resume)
    }

    @discardableResult
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError? {
        inner.decide(transfer, decision)
    }

    /// Only downloads are segmented: a streamed body's transfer is the engine's own.
    func supply(_ transfer: UInt64, _ bytes: Data, end: Bool) -> Bool {
        inner.supply(transfer, bytes, end: end)
    }

    /// The engine transfers of logical handle `transfer` (itself, for a transfer that is not segmented).
    private func transfers(of transfer: UInt64) -> [UInt64] {
        state.withLock { state in
            state.downloads[transfer].map { Array($0.transfers.keys) } ?? [transfer]
        }
    }

    // MARK: Resuming

    /// One ranged transfer per unfinished segment of `map`; a map with none left completes at once.
    private func resume(_ spec: TransferSpec, map: [DownloadSegment], as id: TransferID) -> Result<UInt64, CourierError>
    {
        let onDisk = DownloadSegment.bytesOnDisk(map)
        let length = map.map(\.end).max() ?? 0
        var download = Download(id: id, spec: spec, logical: 0, segments: map, resumedAt: onDisk, length: length)
        for (index, segment) in map.enumerated() where !segment.isComplete {
            switch inner.submit(segmentSpec(spec, segment), as: id) {
            case .success(let transfer):
                if download.logical == 0 {
                    download.logical = transfer
                }
                download.transfers[transfer] = index
            case .failure(let error):
                download.transfers.keys.forEach { inner.cancel($0, producingResumeData: false) }
                return .failure(error)
            }
        }
        guard download.logical != 0 else {
            // Every segment is on disk already: nothing to ask the server.
            let logical = UInt64.max - UInt64(id.task)
            let events = [
                segmentsEvent(download, logical: logical),
                TransferEvent(
                    id: id,
                    transfer: logical,
                    progress: TransferProgress(received: 0, expectedToReceive: 0),
                    payload: .complete(TransferCompletion(error: nil, bytesOnDisk: length))
                ),
            ]
            DispatchQueue.global().async { [deliver] in deliver(events) }
            return .success(logical)
        }
        let registered = download
        state.withLock { state in
            state.downloads[registered.logical] = registered
            for transfer in registered.transfers.keys {
                state.owners[transfer] = registered.logical
            }
        }
        return .success(registered.logical)
    }

    /// The spec of the ranged transfer that fetches the rest of `segment`.
    private func segmentSpec(_ spec: TransferSpec, _ segment: DownloadSegment) -> TransferSpec {
        var ranged = spec
        ranged.resumeOffset = segment.start + segment.done
        ranged.rangeLength = segment.end - ranged.resumeOffset
        if case .file(let path, _) = spec.sink {
            ranged.sink = .file(path: path, append: true)
        }
        ranged.askResponse = false
        ranged.decodesContent = false
        ranged.digest = nil
        ranged.announcedDigest = false
        ranged.segments = 1
        ranged.segmentMap = nil
        return ranged
    }

    // MARK: Events

    /// The session's events with those of segmented downloads folded into one transfer each.
    func rewrite(_ batch: [TransferEvent]) -> [TransferEvent] {
        guard everSegmented.load(ordering: .acquiring) else {
            return batch
        }
        var output: [TransferEvent] = []
        output.reserveCapacity(batch.count)
        var touched: [UInt64] = []
        var splits: [(logical: UInt64, download: Download, validator: String)] = []
        state.withLock { state in
            for event in batch {
                if state.abandoned.contains(event.transfer) {
                    if case .complete = event.payload {
                        state.abandoned.remove(event.transfer)
                    }
                    continue
                }
                guard let logical = state.owners[event.transfer], var download = state.downloads[logical] else {
                    output.append(event)
                    continue
                }
                let index = download.transfers[event.transfer] ?? 0
                if download.segments.isEmpty {
                    // Not split (yet): the first transfer is the download.
                    if case .response(let held, _, let head) = event.payload, !held,
                        let (split, validator) = Self.split(head, spec: download.spec)
                    {
                        download.segments = split
                        download.length = split.last?.end ?? 0
                        download.responded = true
                        splits.append((logical, download, validator))
                        state.downloads[logical] = download
                        output.append(event)
                        continue
                    }
                    if case .complete = event.payload {
                        state.downloads[logical] = nil
                        state.owners[event.transfer] = nil
                    }
                    output.append(event)
                    continue
                }
                switch event.payload {
                case .response(_, _, let head):
                    if index > 0, head.status == 206 {
                        download.rangesServed.insert(index)
                    }
                    if !download.responded {
                        download.responded = true
                        output.append(
                            TransferEvent(
                                id: download.id,
                                transfer: logical,
                                progress: progress(download),
                                payload: .response(held: false, resumeOffset: download.resumedAt, head: head)
                            )
                        )
                    }
                case .complete(let completion):
                    state.owners[event.transfer] = nil
                    if index > 0, !download.cutting, completion.error?.code == .cannotResume {
                        // A range answered with the whole entity: the server does not serve ranges after all. The
                        // first transfer, still going, fetches everything; the other ranged ones are given up.
                        for (other, otherIndex) in download.transfers where otherIndex > 0 && other != event.transfer {
                            state.abandoned.insert(other)
                            state.owners[other] = nil
                            inner.cancel(other, producingResumeData: false)
                        }
                        download.transfers = download.transfers.filter { $0.value == 0 }
                        download.segments = []
                        state.downloads[logical] = download
                        output.append(
                            TransferEvent(
                                id: download.id, transfer: logical, progress: event.progress, payload: .segments([]))
                        )
                        continue
                    }
                    segmentEnded(&download, index: index, transfer: event.transfer, completion)
                default:
                    break
                }
                record(&download, index: index, event.progress)
                if download.firstCanBeCut, let first = download.transfers.first(where: { $0.value == 0 })?.key {
                    // The first transfer reached the second segment, and every other segment's server answered its
                    // range: cut it (its bytes past the end are the same bytes the next segments write).
                    download.cutting = true
                    inner.cancel(first, producingResumeData: false)
                }
                state.downloads[logical] = download
                if !touched.contains(logical) {
                    touched.append(logical)
                }
            }
            for logical in touched {
                guard let download = state.downloads[logical] else {
                    continue
                }
                output.append(segmentsEvent(download, logical: logical))
                if download.transfers.isEmpty {
                    output.append(completion(download, logical: logical))
                    state.downloads[logical] = nil
                } else {
                    output.append(
                        TransferEvent(
                            id: download.id, transfer: logical, progress: progress(download), payload: .progress)
                    )
                }
            }
        }
        for split in splits {
            start(split.download, logical: split.logical, validator: split.validator)
        }
        return output
    }

    /// Starts the ranged transfers of a download just split (every segment but the first, which its first transfer
    /// fetches), each asking for its range only if the entity is still `validator`.
    private func start(_ download: Download, logical: UInt64, validator: String) {
        for (index, segment) in download.segments.enumerated().dropFirst() {
            var ranged = segmentSpec(download.spec, segment)
            ranged.headers =
                ranged.headers.filter { !$0.lowercased().hasPrefix("if-range:") } + ["If-Range: \(validator)"]
            switch inner.submit(ranged, as: download.id) {
            case .success(let transfer):
                let kept = state.withLock { state -> Bool in
                    guard state.downloads[logical] != nil else {
                        return false
                    }
                    state.downloads[logical]?.transfers[transfer] = index
                    state.owners[transfer] = logical
                    return true
                }
                if !kept {
                    inner.cancel(transfer, producingResumeData: false)
                }
            case .failure(let error):
                state.withLock { state in
                    if state.downloads[logical]?.firstError == nil {
                        state.downloads[logical]?.firstError = error
                    }
                }
                cancel(logical, producingResumeData: false)
                return
            }
        }
    }

    /// A segment's transfer ended: its segment is complete, or the download fails (the other transfers are cut).
    private func segmentEnded(
        _ download: inout Download, index: Int, transfer: UInt64, _ completion: TransferCompletion
    ) {
        download.transfers[transfer] = nil
        if index == 0 {
            download.metrics = completion.metrics
        }
        let segment = download.segments[index]
        let onDisk = completion.bytesOnDisk - segment.start
        download.segments[index].done = min(segment.end - segment.start, max(segment.done, onDisk))
        let cutOnPurpose = index == 0 && download.cutting && download.segments[index].isComplete
        if completion.error == nil || cutOnPurpose {
            download.segments[index].done = segment.end - segment.start
            return
        }
        if download.firstError == nil {
            download.firstError = completion.error
            for other in download.transfers.keys {
                inner.cancel(other, producingResumeData: false)
            }
        }
    }

    /// Updates a segment from its transfer's counters (bytes on disk, not merely received: what resume data keeps).
    private func record(_ download: inout Download, index: Int, _ progress: TransferProgress) {
        guard index < download.segments.count else {
            return
        }
        let segment = download.segments[index]
        download.received[index] = max(download.received[index] ?? 0, progress.received)
        if let onDisk = progress.bytesOnDisk, onDisk > segment.start {
            download.segments[index].done = min(segment.end - segment.start, max(segment.done, onDisk - segment.start))
        }
    }

    private func progress(_ download: Download) -> TransferProgress {
        var received: Int64 = 0
        for (index, segment) in download.segments.enumerated() {
            received += min(download.received[index] ?? 0, segment.end - segment.start)
        }
        let expected = download.length >= 0 ? download.length - download.resumedAt : -1
        return TransferProgress(received: min(received, max(expected, received)), expectedToReceive: expected)
    }

    private func segmentsEvent(_ download: Download, logical: UInt64) -> TransferEvent {
        TransferEvent(
            id: download.id, transfer: logical, progress: progress(download), payload: .segments(download.segments))
    }

    /// The download's one COMPLETE: success when every segment is on disk, else the first failure with the bytes
    /// each segment kept.
    private func completion(_ download: Download, logical: UInt64) -> TransferEvent {
        let whole = download.segments.allSatisfy(\.isComplete)
        var error = whole ? nil : (download.firstError ?? CourierError(.networkConnectionLost, "a segment ended early"))
        if error != nil, error?.code == .cancelled {
            error?.message = "cancelled"
        }
        return TransferEvent(
            id: download.id,
            transfer: logical,
            progress: progress(download),
            payload: .complete(
                TransferCompletion(
                    error: error,
                    bytesOnDisk: whole ? download.length : DownloadSegment.contiguousPrefix(download.segments),
                    metrics: download.metrics ?? TransferMetrics()
                )
            )
        )
    }

    /// The entity split in segments and its strong validator, when `head` is a whole entity the server also serves
    /// in byte ranges.
    private static func split(_ head: ResponseHead, spec: TransferSpec) -> ([DownloadSegment], String)? {
        guard head.status == 200, spec.resumeOffset == 0,
            head.value("Accept-Ranges")?.lowercased().contains("bytes") == true,
            head.value("Content-Encoding").map({ $0.lowercased() == "identity" }) ?? true,
            let length = head.value("Content-Length").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }),
            length >= 2 * DownloadSegment.minimumLength,
            let validator = ResumeData.strongValidator(
                etag: head.value("ETag"),
                lastModified: head.value("Last-Modified"),
                date: head.value("Date")
            )
        else {
            return nil
        }
        let segments = DownloadSegment.split(length: length, count: spec.segments)
        return segments.count > 1 ? (segments, validator) : nil
    }
}

/// The engine callback's weak reference to the session's ``SegmentingBackend``.
///
/// `@unchecked Sendable`: `backend` is set once, before the engine runs a transfer, and only read afterwards; the
/// weak reference itself is thread-safe.
final class WeakSegmentingBackend: @unchecked Sendable {
    weak var backend: SegmentingBackend?
}
