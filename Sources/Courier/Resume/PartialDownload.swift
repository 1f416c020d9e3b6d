package import Foundation

/// A running download's partial file and what resuming it needs, read while the transfer runs.
///
/// courierd journals one at each checkpoint, so that a download cut off by a crash of the daemon resumes from the
/// bytes on disk (Range + If-Range) instead of from zero. A download that cannot be resumed (no strong validator, no
/// byte ranges, a content coding, not a GET) has none.
package struct PartialDownload: Codable, Sendable, Equatable {
    /// The staging file the transfer writes to (an absolute path).
    package var file: String
    /// How to resume; its `file` is empty until ``resumeData(movingFileInto:bytesOnDisk:)`` names one.
    var resume: ResumeData

    /// The contiguous bytes of the entity in the file when this was read.
    package var bytesOnDisk: Int64 { resume.bytesOnDisk }
    /// The entity's length, when the server said it.
    package var expectedLength: Int64? { resume.expectedLength }
    /// The strong validator sent as `If-Range`.
    package var validator: String { resume.validator }

    init(file: String, resume: ResumeData) {
        self.file = file
        self.resume = resume
    }

    /// The partial download that resume data names, the data having been made by a session whose
    /// `resumeDataDirectory` is `directory`; nil for data that does not decode.
    package init?(resumeData: Data, directory: URL) {
        guard case .success(let resume) = ResumeData.decode(resumeData) else {
            return nil
        }
        self.file = directory.appendingPathComponent(resume.file).path
        self.resume = resume
        self.resume.file = ""
    }

    /// Moves the partial file into `directory` (the session's `resumeDataDirectory`), keeping its first
    /// `bytesOnDisk` bytes, and returns resume data for ``Session/downloadTask(withResumeData:)``; nil when the file
    /// is gone or cannot be moved.
    package func resumeData(movingFileInto directory: URL, bytesOnDisk: Int64) -> Data? {
        var resume = self.resume
        if resume.segments != nil && bytesOnDisk < resume.keptLength {
            // Not every segment's bytes can be trusted (a power loss): go on from the trusted prefix only.
            resume.segments = nil
            resume.bytesOnDisk = min(bytesOnDisk, resume.bytesOnDisk)
            return resume.keeping(URL(fileURLWithPath: file), in: directory)?.encoded()
        }
        if resume.segments != nil {
            return resume.keeping(URL(fileURLWithPath: file), in: directory)?.encoded()
        }
        resume.bytesOnDisk = bytesOnDisk
        return resume.keeping(URL(fileURLWithPath: file), in: directory)?.encoded()
    }
}

extension DownloadTask {
    /// The partial file as it stands, for a journal; nil before a resumable response arrived, or when the download
    /// cannot be resumed. A task made from resume data and not started yet has the file of that resume data, where it
    /// still is (the task takes it over when it starts). Cheap: reads the task's state under its lock. May be called
    /// on any thread, at any time.
    package func partialDownload() -> PartialDownload? {
        let (staging, description) = storage.withLock { machine -> (URL?, ResumeData?) in
            guard let staging = machine.staging else {
                return (nil, machine.resumeSource)
            }
            let description = ResumeData.describing(
                request: machine.currentRequest ?? machine.originalRequest,
                originalRequest: machine.originalRequest,
                response: machine.finalResponse?.head,
                resumeSource: machine.resumeSource,
                bytesOnDisk: machine.bodyOffset + machine.received,
                segments: machine.segmentMap
            )
            return (staging, description)
        }
        guard let description else {
            return nil
        }
        guard let staging else {
            var resume = description
            resume.file = ""
            let directory = core.configuration.resumeDataDirectory
            let file = directory.appendingPathComponent(description.file, isDirectory: false)
            return PartialDownload(file: file.path, resume: resume)
        }
        return PartialDownload(file: staging.path, resume: description)
    }
}
