package import Foundation

extension FileManager {
    /// The length of the file at `path`, or nil when it cannot be read (gone, not permitted).
    package func fileLength(atPath path: String) -> Int64? {
        (try? attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
    }
}
