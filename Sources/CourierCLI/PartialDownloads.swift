import Foundation

/// Interrupted downloads kept in the output directory between runs of `courier get`.
///
/// For a destination `NAME` they are two files: `NAME.part`, the bytes received so far, and `NAME.part.resume`,
/// the task's Courier resume data (the versioned JSON format of `docs/resume-data.md`). The session's
/// `resumeDataDirectory` is the output directory, and the resume data's `file` member (a name relative to that
/// directory) is rewritten to `NAME.part` when the partial file is renamed, so that `--continue` finds both by
/// the destination name alone.
struct PartialDownloads: Sendable {
    /// The output directory (also the session's `resumeDataDirectory`).
    let directory: URL

    enum Lookup {
        /// Nothing kept for this name.
        case none
        /// Resume data to hand to `downloadTask(withResumeData:)`.
        case resumable(Data, bytesOnDisk: Int64?)
        /// Something is kept but cannot be used; the download starts over.
        case unusable(String)
    }

    enum SaveOutcome {
        /// `NAME.part` and `NAME.part.resume` were written; `bytes` were kept.
        case saved(bytes: Int64?)
        case failed(String)
    }

    func partialURL(_ name: String) -> URL {
        directory.appendingPathComponent(FileNaming.partialName(for: name))
    }

    func resumeDataURL(_ name: String) -> URL {
        directory.appendingPathComponent(FileNaming.resumeDataName(for: name))
    }

    /// What `--continue` can use for destination `name` when downloading `url`. Resume data of this URL whose
    /// partial file is gone is deleted.
    func lookup(name: String, url: URL) -> Lookup {
        let resumeURL = resumeDataURL(name)
        guard FileSystem.entryExists(resumeURL) else {
            return .none
        }
        guard let data = try? Data(contentsOf: resumeURL), var object = Self.decode(data) else {
            return .unusable("\(resumeURL.lastPathComponent) is not Courier resume data")
        }
        let recorded = [object["originalURL"] as? String, object["url"] as? String].compactMap { $0 }
        guard recorded.contains(url.absoluteString) else {
            return .unusable("\(resumeURL.lastPathComponent) belongs to another URL (\(recorded.first ?? "none"))")
        }
        let partName = FileNaming.partialName(for: name)
        guard FileSystem.isRegularFile(partialURL(name)) else {
            FileSystem.removeIfPresent(resumeURL)  // Useless without its partial file.
            return .unusable("\(partName) is missing")
        }
        let bytes = (object["bytesOnDisk"] as? NSNumber)?.int64Value
        if object["file"] as? String == partName {
            return .resumable(data, bytesOnDisk: bytes)
        }
        object["file"] = partName
        guard let rewritten = Self.encode(object) else {
            return .unusable("\(resumeURL.lastPathComponent) could not be read")
        }
        return .resumable(rewritten, bytesOnDisk: bytes)
    }

    /// Keeps the partial file the session left for `resumeData` as `NAME.part`, and the resume data as
    /// `NAME.part.resume`.
    func save(resumeData: Data, name: String) -> SaveOutcome {
        let partial = partialURL(name)
        let resumeURL = resumeDataURL(name)
        var toWrite = resumeData
        var bytes: Int64?
        if var object = Self.decode(resumeData), let file = object["file"] as? String, !file.contains("/") {
            bytes = (object["bytesOnDisk"] as? NSNumber)?.int64Value
            let source = directory.appendingPathComponent(file)
            if source.lastPathComponent != partial.lastPathComponent {
                guard FileSystem.isRegularFile(source) else {
                    return .failed("the partial file \(file) is gone")
                }
                do {
                    try FileSystem.replace(partial, with: source)
                } catch {
                    return .failed(error.description)
                }
                object["file"] = partial.lastPathComponent
                guard let encoded = Self.encode(object) else {
                    return .failed("the resume data could not be rewritten")
                }
                toWrite = encoded
            }
        }
        do {
            try toWrite.write(to: resumeURL, options: .atomic)
        } catch {
            return .failed("cannot write \(resumeURL.path): \(FileSystem.reason(error))")
        }
        return .saved(bytes: bytes)
    }

    /// Deletes what was kept for `name` (after it completed, or when it cannot be used).
    func discard(name: String) {
        FileSystem.removeIfPresent(resumeDataURL(name))
        FileSystem.removeIfPresent(partialURL(name))
    }

    private static func decode(_ data: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    private static func encode(_ object: [String: Any]) -> Data? {
        try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }
}
