public import Foundation

/// A task whose response body is written to a staging file by the engine (Swift never sees the bytes).
///
/// `@unchecked Sendable` for the reason given on ``SessionTask``.
public final class DownloadTask: SessionTask, @unchecked Sendable {
    /// The digest the downloaded file must have. Set it before `resume()`. The engine hashes the file while it
    /// writes it (a resumed download's bytes already on disk are read once); a file with another digest is never
    /// handed over: the task fails with `CourierError.Code.checksumMismatch`, the file is deleted and no resume
    /// data is made. Without one, a download whose response announces a SHA-256 or SHA-512 digest of the whole file
    /// (`Repr-Digest`, `Content-Digest` of a 200, `Digest`) is checked against that. In a background session,
    /// courierd checks before the app hears of the file.
    public var expectedChecksum: Checksum? {
        get { storage.withLock { $0.expectedChecksum } }
        set { storage.withLock { $0.expectedChecksum = newValue } }
    }

    /// A digest the engine computes of the file while it writes it, even when none is expected (courierd journals
    /// it with the finished file, to check the file after a power cut). Set it before `resume()`. Not computed for a
    /// segmented download (its segments arrive out of order).
    package var fileDigestAlgorithm: Checksum.Algorithm? {
        get { storage.withLock { $0.fileDigestAlgorithm } }
        set { storage.withLock { $0.fileDigestAlgorithm = newValue } }
    }

    /// The digest the engine computed of the finished file, of ``expectedChecksum``'s algorithm or
    /// ``fileDigestAlgorithm``; nil when it computed none. Read it in `didFinishDownloadingTo`.
    package var fileDigest: Checksum? {
        storage.withLock { $0.fileDigest }
    }

    /// The most ranged connections this download uses at once (aria2's `-s`), or nil (the default) for the session's
    /// ``SessionConfiguration/maximumSegmentsPerDownload``; 1 to 16. A response of at least 2 MiB from a server that
    /// serves byte ranges (with a strong validator and no content coding) is split in segments of at least 1 MiB,
    /// fetched at once into their places in the file; any other server keeps the one connection. An interrupted
    /// segmented download's resume data (and courierd's journal) keeps each segment's bytes, and resuming goes on
    /// with every unfinished segment. Set it before `resume()`.
    public var maximumSegments: Int? {
        get { storage.withLock { $0.maximumSegments } }
        set { storage.withLock { $0.maximumSegments = newValue.map { min(max($0, 1), DownloadSegment.maximumCount) } } }
    }

    /// Cancels the download and produces resume data for ``Session/downloadTask(withResumeData:)``.
    ///
    /// `completionHandler` is called once, on the delegate queue, before `didCompleteWithError`, with nil when
    /// the download cannot be resumed (not a GET, no strong validator, no byte-range support, or it already
    /// completed). The partial file moves to the configuration's `resumeDataDirectory`.
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        let registered = storage.withLock { state -> Bool in
            switch state.phase {
            case .running:
                if state.resumeDataHandler == nil {
                    state.resumeDataHandler = completionHandler
                    return true
                }
                return false
            case .created:
                return false
            case .finishing, .completed:
                return false
            }
        }
        if !registered {
            var work = DelegateWork()
            work.append { _ in completionHandler(nil) }
            core.dispatcher.enqueue(work)
        }
        cancel()
    }
}

extension SessionTask {
    /// Takes over the partial file named by resume data: checks it, then moves it into the session's staging
    /// directory (so the same resume data cannot be used twice).
    func claimPartialFile(_ resume: ResumeData) -> Result<URL, CourierError> {
        let source = core.configuration.resumeDataDirectory.appendingPathComponent(resume.file)
        let url = URL(string: resume.url)
        guard let size = FileManager.default.fileLength(atPath: source.path) else {
            return .failure(CourierError(.cannotResume, "the partial file of the resume data is gone", failingURL: url))
        }
        guard size >= resume.keptLength else {
            return .failure(
                CourierError(.fileChanged, "the partial file is shorter than the resume data says", failingURL: url)
            )
        }
        let staging: URL
        switch core.makeStagingFile() {
        case .success(let made):
            staging = made
        case .failure(let error):
            return .failure(error)
        }
        do {
            try FileManager.default.moveItem(at: source, to: staging)
        } catch {
            return .failure(CourierError(.cannotResume, "cannot take over the partial file: \(error)", failingURL: url))
        }
        if size > resume.keptLength, let handle = try? FileHandle(forWritingTo: staging) {
            try? handle.truncate(atOffset: UInt64(resume.keptLength))
            try? handle.close()
        }
        return .success(staging)
    }
}
