import Foundation

/// How `courier get` names the files it saves.
///
/// The name comes from the last path component of the URL (percent-decoded), made safe to use as a single file
/// name inside the output directory: no path separators (`/` and `\` become `_`), no control characters, no
/// leading dots (so no hidden files, no `..`), no surrounding spaces, at most ``maximumLength`` UTF-8 bytes, and
/// `index` when nothing is left (a URL ending in `/`, or no path at all).
enum FileNaming {
    /// Leaves room for a `-NNNN` suffix and the `.part.resume` extension under the usual 255-byte name limit.
    static let maximumLength = 200

    /// The sanitised file name for `url`.
    static func fileName(for url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        let lastComponent = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        let decoded = lastComponent.removingPercentEncoding ?? lastComponent
        return sanitize(decoded)
    }

    /// Makes `raw` safe as one file name; see the type's documentation.
    static func sanitize(_ raw: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            switch scalar.value {
            case 0..<0x20, 0x7F, 0x80..<0xA0:
                continue
            case 0x2F, 0x5C:  // "/" and "\"
                scalars.append("_")
            default:
                scalars.append(scalar)
            }
        }
        var name = String(scalars).trimmingCharacters(in: .whitespaces)
        while name.hasPrefix(".") {
            name.removeFirst()
        }
        name = name.trimmingCharacters(in: .whitespaces)
        if name.utf8.count > maximumLength {
            name = truncate(name, toUTF8Count: maximumLength)
        }
        return name.isEmpty ? "index" : name
    }

    /// `name` with `-n` inserted before its extensions: `file.tar.gz` becomes `file-2.tar.gz`.
    static func name(_ name: String, withSuffix number: Int) -> String {
        if let dot = name.firstIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot])-\(number)\(name[dot...])"
        }
        return "\(name)-\(number)"
    }

    /// The partial file kept for `name` by an interrupted download.
    static func partialName(for name: String) -> String {
        name + ".part"
    }

    /// The resume data kept beside the partial file of `name`.
    static func resumeDataName(for name: String) -> String {
        name + ".part.resume"
    }

    private static func truncate(_ name: String, toUTF8Count limit: Int) -> String {
        // Keep a short extension when there is one, cut the stem on a character boundary.
        var stem = Substring(name)
        var ext = Substring("")
        if let dot = name.lastIndex(of: "."), dot != name.startIndex,
            name.utf8.distance(from: dot, to: name.endIndex) <= 16
        {
            stem = name[..<dot]
            ext = name[dot...]
        }
        let budget = limit - ext.utf8.count
        var result = ""
        for character in stem {
            if result.utf8.count + String(character).utf8.count > budget {
                break
            }
            result.append(character)
        }
        return result + ext
    }
}

/// Chooses the destination names of one run, so that two URLs never write the same file and, without `--force`,
/// no existing file is ever overwritten: an existing `name` gets a `-N` suffix (`name-1`, `name-2`, …).
struct NameReserver {
    let directory: URL
    let overwrite: Bool
    private var taken: Set<String> = []

    init(directory: URL, overwrite: Bool) {
        self.directory = directory
        self.overwrite = overwrite
    }

    /// Reserves a destination name for `base` in this run.
    mutating func reserve(_ base: String) -> String {
        var candidate = base
        var number = 0
        while taken.contains(candidate)
            || (!overwrite && FileSystem.entryExists(directory.appendingPathComponent(candidate)))
        {
            number += 1
            candidate = FileNaming.name(base, withSuffix: number)
        }
        taken.insert(candidate)
        return candidate
    }
}
