import Foundation

/// The calls a process made on its files, as `Tests/Interposers/courier_io.c` recorded them, with the markers the test
/// appended to the same file in between (so each marker sits after every call that took effect before it).
struct IOTrace {
    enum Record: Equatable {
        case open(descriptor: Int32, path: String, flags: Int32, created: Bool)
        case write(descriptor: Int32, offset: Int64, bytes: [UInt8])
        case truncate(descriptor: Int32, length: Int64)
        /// fsync or fdatasync, of a file or a directory.
        case sync(descriptor: Int32)
        /// sync or syncfs: everything.
        case syncAll
        case close(descriptor: Int32)
        case duplicate(copy: Int32, of: Int32)
        case rename(from: String, to: String)
        case link(from: String, to: String)
        /// unlink or rmdir.
        case remove(path: String)
        case makeDirectory(path: String)
        case marker(String)

        var isMarker: Bool {
            if case .marker = self { true } else { false }
        }
    }

    struct Malformed: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "trace malformed at byte \(offset)" }
    }

    var records: [Record]

    /// A marker record as a test appends it (one `write`, so that it is never interleaved with a recorded call).
    static func marker(_ text: String) -> Data {
        let payload = Array(text.utf8)
        return Data("M -1 0 0 \(payload.count)\n".utf8) + payload
    }

    init(contentsOf url: URL) throws {
        let data = try [UInt8](Data(contentsOf: url))
        var records: [Record] = []
        var position = 0
        while position < data.count {
            guard let end = data[position...].firstIndex(of: UInt8(ascii: "\n")) else {
                throw Malformed(offset: position)
            }
            let fields = String(decoding: data[position..<end], as: UTF8.self).split(separator: " ")
            guard fields.count == 5, let operation = fields[0].first, let descriptor = Int32(fields[1]),
                let first = Int64(fields[2]), let second = Int64(fields[3]), let length = Int(fields[4]),
                end + 1 + length <= data.count
            else {
                throw Malformed(offset: position)
            }
            let payload = Array(data[(end + 1)..<(end + 1 + length)])
            position = end + 1 + length
            let paths = payload.split(separator: 0, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            switch operation {
            case "O":
                records.append(
                    .open(
                        descriptor: descriptor,
                        path: paths[0],
                        flags: Int32(truncatingIfNeeded: first),
                        created: second != 0
                    )
                )
            case "W": records.append(.write(descriptor: descriptor, offset: first, bytes: payload))
            case "T": records.append(.truncate(descriptor: descriptor, length: first))
            case "S": records.append(.sync(descriptor: descriptor))
            case "Y": records.append(.syncAll)
            case "C": records.append(.close(descriptor: descriptor))
            case "P": records.append(.duplicate(copy: descriptor, of: Int32(truncatingIfNeeded: first)))
            case "R" where paths.count == 2: records.append(.rename(from: paths[0], to: paths[1]))
            case "L" where paths.count == 2: records.append(.link(from: paths[0], to: paths[1]))
            case "U": records.append(.remove(path: paths[0]))
            case "D": records.append(.makeDirectory(path: paths[0]))
            case "M": records.append(.marker(paths[0]))
            default: throw Malformed(offset: position)
            }
        }
        self.records = records
    }
}
