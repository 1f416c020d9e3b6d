import Foundation

/// The resume data format, version 1 (`"format": "courier-resume/1"`). Documented in `docs/resume-data.md`.
///
/// A JSON object. The partial file is named relative to the session's `resumeDataDirectory`, so resume data
/// survives a change of absolute paths (a moved home or temporary directory).
struct ResumeData: Codable, Sendable, Equatable {
    static let currentFormat = "courier-resume/1"

    /// Always ``currentFormat`` for data this version writes; anything else is refused.
    var format: String
    /// The URL of the entity (after redirects: the URL the partial bytes came from).
    var url: String
    /// The URL the task was created with, before redirects.
    var originalURL: String?
    /// Always "GET".
    var method: String
    /// Request headers to send again (never `Range`, `If-Range`, `Cookie` or `Authorization`).
    var headers: [String: String]
    /// The partial file, relative to the resume directory.
    var file: String
    /// Contiguous bytes of the entity already in the file, from offset 0.
    var bytesOnDisk: Int64
    /// The strong validator for `If-Range`: a strong ETag (quotes included) or a strong Last-Modified date.
    var validator: String
    /// The length of the whole entity, when the server said it.
    var expectedLength: Int64?
    /// A segmented download's segments (``DownloadSegment``), each with its bytes on disk; the file holds each
    /// segment's first `done` bytes at its offset (``bytesOnDisk`` is still the contiguous prefix). Absent otherwise.
    var segments: [DownloadSegment]?

    /// The file's length to keep: the end of the farthest bytes on disk (the contiguous prefix without segments).
    var keptLength: Int64 {
        guard let segments else {
            return bytesOnDisk
        }
        return segments.map { $0.start + min($0.done, $0.end - $0.start) }.max() ?? bytesOnDisk
    }

    func encoded() -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try? encoder.encode(self)
    }

    /// Decodes and checks resume data, or says why it cannot be used.
    static func decode(_ data: Data) -> Result<ResumeData, CourierError> {
        guard let decoded = try? JSONDecoder().decode(ResumeData.self, from: data) else {
            return .failure(CourierError(.cannotResume, "resume data is not courier resume data"))
        }
        guard decoded.format == currentFormat else {
            return .failure(CourierError(.cannotResume, "unsupported resume data format \(decoded.format)"))
        }
        guard let url = URL(string: decoded.url), url.scheme != nil else {
            return .failure(CourierError(.cannotResume, "resume data has no valid URL"))
        }
        let segmentsValid = decoded.segments.map { segments in
            segments.count <= DownloadSegment.maximumCount
                && segments.allSatisfy { $0.start >= 0 && $0.end > $0.start && $0.done >= 0 }
                && zip(segments, segments.dropFirst()).allSatisfy { $0.end == $1.start }
        } ?? true
        guard !decoded.file.isEmpty, !decoded.file.contains("/"), decoded.file != "..", decoded.bytesOnDisk >= 0,
            !decoded.validator.isEmpty, segmentsValid
        else {
            return .failure(CourierError(.cannotResume, "resume data is malformed", failingURL: url))
        }
        return .success(decoded)
    }

    /// The strong validator of a response for `If-Range`, or nil when it has none (RFC 9110 §13.1.5):
    /// a strong ETag, else a Last-Modified at least one second older than the response's Date.
    static func strongValidator(etag: String?, lastModified: String?, date: String?) -> String? {
        if let etag = etag?.trimmingCharacters(in: .whitespaces), !etag.isEmpty {
            if !etag.hasPrefix("W/") && etag.hasPrefix("\"") {
                return etag
            }
        }
        guard let lastModified, let modified = HTTPDate.parse(lastModified) else {
            return nil
        }
        guard let date, let sent = HTTPDate.parse(date), sent.timeIntervalSince(modified) >= 1 else {
            return nil
        }
        return lastModified
    }
}
