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
///
/// ``tornAndReordered()`` adds what ALICE adds for file systems that persist unsynced operations in pieces and out of
/// order: the last written file's unsynced writes kept up to a 512-byte boundary inside its last write (a torn
/// append), that file's unsynced writes kept whole while every other file's are lost (one file's data before
/// another's), and the unsynced names kept while no unsynced data is (names before data).
struct PowerCutModel {
    enum Entry: Equatable, Hashable {
        case directory
        case file([UInt8])
    }

    /// A change to a file's bytes since its last sync.
    private enum Change {
        case write(offset: Int, bytes: [UInt8])
        case truncate(length: Int)
    }

    private struct Node {
        var isDirectory: Bool
        var content: [UInt8] = []
        var synced: [UInt8] = []
        /// Since the last sync, in order.
        var pending: [Change] = []
    }

    let root: String
    private var nodes: [Node] = []
    /// Names as the process sees them.
    private var names: [String: Int] = [:]
    /// Names as a power cut leaves them.
    private var durableNames: [String: Int] = [:]
    private var descriptors: [Int32: (node: Int, path: String)] = [:]
    /// The file written or truncated last.
    private var lastWritten: Int?

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
                    nodes[node].pending.append(.truncate(length: 0))
                }
            } else {
                node = newNode(at: path, directory: flags & O_DIRECTORY != 0)
            }
            descriptors[descriptor] = (node, path)
        case .write(let descriptor, let offset, let bytes):
            guard let node = descriptors[descriptor]?.node else { return }
            let change = Change.write(offset: Int(offset), bytes: bytes)
            Self.apply(change, to: &nodes[node].content)
            nodes[node].pending.append(change)
            lastWritten = node
        case .truncate(let descriptor, let length):
            guard let node = descriptors[descriptor]?.node else { return }
            let change = Change.truncate(length: Int(length))
            Self.apply(change, to: &nodes[node].content)
            nodes[node].pending.append(change)
            lastWritten = node
        case .sync(let descriptor):
            guard let (node, path) = descriptors[descriptor] else { return }
            nodes[node].synced = nodes[node].content
            nodes[node].pending = []
            if nodes[node].isDirectory {
                syncNames(in: path)
            }
        case .syncAll:
            for index in nodes.indices {
                nodes[index].synced = nodes[index].content
                nodes[index].pending = []
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
        state(names: durableNames) { nodes[$0].synced }
    }

    /// The states a power cut now leaves on a file system that persists unsynced operations in pieces or out of
    /// order (see the type's comment), each named; those equal to ``afterPowerCut()`` are left out.
    func tornAndReordered() -> [(kind: String, state: [String: Entry])] {
        var variants: [(String, [String: Entry])] = []
        if let last = lastWritten, !nodes[last].pending.isEmpty {
            let pending = nodes[last].pending
            if case .write(let offset, let bytes) = pending.last!,
                let cut = Self.middleBoundary(from: offset, to: offset + bytes.count)
            {
                var torn = nodes[last].synced
                for change in pending.dropLast() {
                    Self.apply(change, to: &torn)
                }
                Self.apply(.write(offset: offset, bytes: Array(bytes.prefix(cut - offset))), to: &torn)
                variants.append(("torn write", state(names: durableNames) { $0 == last ? torn : nodes[$0].synced }))
            }
            variants.append(
                ("one file's data first", state(names: durableNames) { $0 == last ? nodes[$0].content : nodes[$0].synced })
            )
        }
        variants.append(("names before data", state(names: names) { nodes[$0].synced }))
        let base = afterPowerCut()
        var seen: [[String: Entry]] = [base]
        return variants.filter { variant in
            guard !seen.contains(variant.1) else {
                return false
            }
            seen.append(variant.1)
            return true
        }
    }

    /// The entries under the root with `names` and each file's bytes as `content` says.
    private func state(names: [String: Int], content: (Int) -> [UInt8]) -> [String: Entry] {
        var entries: [String: Entry] = [:]
        for (path, node) in names where path != root && path.hasPrefix(root + "/") && survives(path, in: names) {
            entries[String(path.dropFirst(root.count + 1))] = nodes[node].isDirectory ? .directory : .file(content(node))
        }
        return entries
    }

    private func survives(_ path: String, in names: [String: Int]) -> Bool {
        var directory = Self.parent(path)
        while directory.count > root.count {
            guard let node = names[directory], nodes[node].isDirectory else {
                return false
            }
            directory = Self.parent(directory)
        }
        return directory == root
    }

    /// The 512-byte boundary nearest the middle of `start..<end`, strictly inside it; nil when there is none.
    private static func middleBoundary(from start: Int, to end: Int) -> Int? {
        let middle = (start + end) / 2 / 512 * 512
        for candidate in [middle, middle + 512] where candidate > start && candidate < end {
            return candidate
        }
        return nil
    }

    private static func apply(_ change: Change, to content: inout [UInt8]) {
        switch change {
        case .write(let offset, let bytes):
            let end = offset + bytes.count
            if content.count < end {
                content += [UInt8](repeating: 0, count: end - content.count)
            }
            content.replaceSubrange(offset..<end, with: bytes)
        case .truncate(let length):
            truncate(&content, to: length)
        }
    }

    private static func truncate(_ content: inout [UInt8], to length: Int) {
        if content.count > length {
            content.removeSubrange(length...)
        } else {
            content += [UInt8](repeating: 0, count: length - content.count)
        }
    }

    /// What a SIGKILL now leaves: everything done.
    func afterProcessKill() -> [String: Entry] {
        state(names: names) { nodes[$0].content }
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
