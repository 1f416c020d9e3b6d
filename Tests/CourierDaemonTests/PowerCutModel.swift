import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The files under one directory as a recorded process left them, replayed call by call from an ``IOTrace``, with
/// what a power cut at that moment would leave (the model of ALICE, OSDI 2014, at its most pessimistic, as the
/// reliability issue states it):
///
/// - a file's bytes survive as they were at its last `fsync`/`fdatasync` (or `sync`); writes and truncations since
///   are lost;
/// - a name (a create, a rename's new name, a link, a removal, a new directory) survives only once the directory it is
///   in has been synced; until then the directory's names are as at its last sync;
/// - a name whose directory did not survive does not survive.
///
/// ``afterProcessKill()`` is the optimistic state: everything the process did, as a SIGKILL leaves it.
struct PowerCutModel {
    enum Entry: Equatable, Hashable {
        case directory
        case file([UInt8])
    }

    private struct Node {
        var isDirectory: Bool
        var content: [UInt8] = []
        var synced: [UInt8] = []
    }

    let root: String
    private var nodes: [Node] = []
    /// Names as the process sees them.
    private var names: [String: Int] = [:]
    /// Names as a power cut leaves them.
    private var durableNames: [String: Int] = [:]
    private var descriptors: [Int32: (node: Int, path: String)] = [:]

    /// A model of `root`, an existing (durable) empty directory.
    init(root: String) {
        self.root = root
        nodes.append(Node(isDirectory: true))
        names[root] = 0
        durableNames[root] = 0
    }

    private static func parent(_ path: String) -> String {
        (path as NSString).deletingLastPathComponent
    }

    private mutating func newNode(at path: String, directory: Bool) -> Int {
        nodes.append(Node(isDirectory: directory))
        names[path] = nodes.count - 1
        return nodes.count - 1
    }

    mutating func apply(_ record: IOTrace.Record) {
        switch record {
        case .open(let descriptor, let path, let flags, let created):
            let node: Int
            if let existing = names[path], !created {
                node = existing
                if flags & O_TRUNC != 0 {
                    nodes[node].content = []
                }
            } else {
                node = newNode(at: path, directory: flags & O_DIRECTORY != 0)
            }
            descriptors[descriptor] = (node, path)
        case .write(let descriptor, let offset, let bytes):
            guard let node = descriptors[descriptor]?.node else { return }
            let end = Int(offset) + bytes.count
            if nodes[node].content.count < end {
                nodes[node].content += [UInt8](repeating: 0, count: end - nodes[node].content.count)
            }
            nodes[node].content.replaceSubrange(Int(offset)..<end, with: bytes)
        case .truncate(let descriptor, let length):
            guard let node = descriptors[descriptor]?.node else { return }
            let length = Int(length)
            if nodes[node].content.count > length {
                nodes[node].content.removeSubrange(length...)
            } else {
                nodes[node].content += [UInt8](repeating: 0, count: length - nodes[node].content.count)
            }
        case .sync(let descriptor):
            guard let (node, path) = descriptors[descriptor] else { return }
            nodes[node].synced = nodes[node].content
            if nodes[node].isDirectory {
                syncNames(in: path)
            }
        case .syncAll:
            for index in nodes.indices {
                nodes[index].synced = nodes[index].content
            }
            durableNames = names
        case .close(let descriptor):
            descriptors[descriptor] = nil
        case .duplicate(let copy, let original):
            descriptors[copy] = descriptors[original]
        case .rename(let from, let to):
            guard let node = names[from] else { return }
            // A directory's names move with it.
            for (path, child) in names where path.hasPrefix(from + "/") {
                names[path] = nil
                names[to + path.dropFirst(from.count)] = child
            }
            names[from] = nil
            names[to] = node
        case .link(let from, let to):
            names[to] = names[from]
        case .remove(let path):
            names[path] = nil
        case .makeDirectory(let path):
            _ = newNode(at: path, directory: true)
        case .marker:
            break
        }
    }

    /// A synced directory: its names, as the process sees them, survive.
    private mutating func syncNames(in directory: String) {
        for path in durableNames.keys where Self.parent(path) == directory && names[path] == nil {
            durableNames[path] = nil
        }
        for (path, node) in names where Self.parent(path) == directory {
            durableNames[path] = node
        }
    }

    /// What a power cut now leaves under the root (paths relative to it; the root itself left out).
    func afterPowerCut() -> [String: Entry] {
        var entries: [String: Entry] = [:]
        for (path, node) in durableNames where path != root && survives(path) {
            entries[String(path.dropFirst(root.count + 1))] =
                nodes[node].isDirectory ? .directory : .file(nodes[node].synced)
        }
        return entries
    }

    private func survives(_ path: String) -> Bool {
        var directory = Self.parent(path)
        while directory.count > root.count {
            guard let node = durableNames[directory], nodes[node].isDirectory else {
                return false
            }
            directory = Self.parent(directory)
        }
        return directory == root
    }

    /// What a SIGKILL now leaves: everything done.
    func afterProcessKill() -> [String: Entry] {
        var entries: [String: Entry] = [:]
        for (path, node) in names where path != root && path.hasPrefix(root + "/") {
            entries[String(path.dropFirst(root.count + 1))] =
                nodes[node].isDirectory ? .directory : .file(nodes[node].content)
        }
        return entries
    }

    /// Replaces everything under `root` with `entries` (directories 0700, files 0600).
    static func materialize(_ entries: [String: Entry], at root: URL) throws {
        let manager = FileManager.default
        for item in (try? manager.contentsOfDirectory(atPath: root.path)) ?? [] {
            try manager.removeItem(at: root.appendingPathComponent(item))
        }
        try manager.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for (path, entry) in entries.sorted(by: { $0.key.count < $1.key.count }) {
            let url = root.appendingPathComponent(path)
            switch entry {
            case .directory:
                try manager.createDirectory(
                    at: url,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            case .file(let bytes):
                guard
                    manager.createFile(atPath: url.path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
                else {
                    throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
                }
            }
        }
    }
}
