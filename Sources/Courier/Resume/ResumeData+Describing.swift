import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ResumeData {
    /// Describes how a download could resume, or nil when it cannot: not a GET, no strong validator, no byte-range
    /// support, or a content coding (the file holds decoded bytes; a range of the encoded entity could not be
    /// appended to them). The description's `file` is empty: ``keeping(_:in:)`` names it.
    ///
    /// - Parameters:
    ///   - request: the request of the hop whose body is in the file (after redirects).
    ///   - response: that hop's response head, when one arrived.
    ///   - resumeSource: the resume data the task was made from, for a task that failed before a new body arrived.
    ///   - bytesOnDisk: the contiguous prefix of the entity in the file.
    static func describing(
        request: TaskRequest?,
        originalRequest: TaskRequest?,
        response head: ResponseHead?,
        resumeSource: ResumeData?,
        bytesOnDisk: Int64,
        segments: [DownloadSegment]? = nil
    ) -> ResumeData? {
        guard let request, let url = request.url, request.method.uppercased() == "GET" else {
            return nil
        }
        var validator: String?
        var expectedLength: Int64?
        var bytesOnDisk = bytesOnDisk
        if let head, head.status == 200 || head.status == 206 {
            let acceptsRanges =
                head.status == 206
                || (head.value("Accept-Ranges")?.lowercased().contains("bytes") ?? false)
            guard acceptsRanges, !SessionTask.hasContentCoding(head) else {
                return nil
            }
            validator = ResumeData.strongValidator(
                etag: head.value("ETag"),
                lastModified: head.value("Last-Modified"),
                date: head.value("Date")
            )
            if head.status == 206, head.value("Content-Range")?.contains("/") == true {
                expectedLength = head.contentRangeTotal
            } else if let length = head.value("Content-Length").flatMap({ Int64($0) }) {
                expectedLength = length
            }
        } else if let source = resumeSource {
            // Failed before a 200/206 body arrived (no response, or an error status that was not written): the
            // partial file is as it was.
            validator = source.validator
            expectedLength = source.expectedLength
            bytesOnDisk = max(bytesOnDisk, source.bytesOnDisk)
        }
        if let segments, !segments.isEmpty {
            bytesOnDisk = DownloadSegment.contiguousPrefix(segments)
        }
        guard let validator, bytesOnDisk >= 0 else {
            return nil
        }
        var headers: [String: String] = [:]
        for (name, value) in request.headerFields {
            // A resumed range always asks for the identity coding (SessionTask+Submit), whatever the first
            // request asked: its Accept-Encoding is not kept.
            let dropped = ["range", "if-range", "cookie", "authorization", "proxy-authorization", "accept-encoding"]
            if !dropped.contains(name.lowercased()) {
                headers[name] = value
            }
        }
        return ResumeData(
            format: ResumeData.currentFormat,
            url: url.absoluteString,
            originalURL: originalRequest?.url?.absoluteString,
            method: "GET",
            headers: headers,
            file: "",
            bytesOnDisk: bytesOnDisk,
            validator: validator,
            expectedLength: expectedLength,
            segments: segments.flatMap { $0.isEmpty ? nil : $0 }
        )
    }

    /// Moves the partial file into `directory` under a fresh name, cut to ``keptLength`` (only the contiguous
    /// prefix counts, or each segment's bytes), and returns this description naming it; nil when the file cannot be
    /// moved.
    func keeping(_ partialFile: URL, in directory: URL) -> ResumeData? {
        let name = "courier-\(UUID().uuidString).partial"
        let destination = directory.appendingPathComponent(name)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileManager.default.moveItem(at: partialFile, to: destination)
        } catch {
            return nil
        }
        if let handle = try? FileHandle(forWritingTo: destination) {
            try? handle.truncate(atOffset: UInt64(keptLength))
            try? handle.close()
        }
        var kept = self
        kept.file = name
        return kept
    }
}
