import Foundation

/// One FILE of a `courier put` run, decided before any upload starts.
struct UploadPlan: Sendable {
    /// The position of the file among the files on the command line.
    let index: Int
    /// The file as given on the command line (for messages).
    let path: String
    let fileURL: URL
    /// Where the file goes.
    let url: URL
    /// The file's size, or why it cannot be sent (missing, unreadable, a directory): such a file fails at once
    /// and the others still go.
    let size: Result<Int64, FileSystem.Failure>

    /// The line that names this upload in errors: `FILE -> URL`.
    var subject: String {
        "\(path) -> \(url.absoluteString)"
    }

    /// The plans for `paths` sent to `base`. With `appendingNames` (several files, or a URL whose path ends in
    /// "/" or is empty), each goes to `base` with the file's name appended to the path, percent-encoded
    /// (`a b.txt` to `…/a%20b.txt`; the query is kept); otherwise the one file goes to `base` exactly.
    static func plans(for paths: [String], to base: URLComponents, appendingNames: Bool) -> [UploadPlan] {
        paths.enumerated().map { index, path in
            let fileURL = URL(fileURLWithPath: path)
            var destination = base
            if appendingNames {
                let directory = base.percentEncodedPath.isEmpty ? "/" : base.percentEncodedPath
                destination.percentEncodedPath = directory + encodeName(fileURL.lastPathComponent)
            }
            guard let url = destination.url else {  // Not expected: every part was valid or encoded.
                let failure = FileSystem.Failure(description: "cannot make a URL for it from \(base)")
                return UploadPlan(index: index, path: path, fileURL: fileURL, url: fileURL, size: .failure(failure))
            }
            return UploadPlan(
                index: index,
                path: path,
                fileURL: fileURL,
                url: url,
                size: FileSystem.readableFileSize(fileURL)
            )
        }
    }

    /// Whether a file sent to `base` gets its name appended: the URL's path ends in "/" or is empty.
    static func appendsName(to base: URLComponents) -> Bool {
        base.percentEncodedPath.isEmpty || base.percentEncodedPath.hasSuffix("/")
    }

    /// Characters left as they are in a path segment: RFC 3986 unreserved. Everything else is percent-encoded.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    private static func encodeName(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: unreserved) ?? name
    }
}
