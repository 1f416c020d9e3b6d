package import Courier
package import Foundation

/// Why a journal operation failed.
package enum JournalError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The journal's directory or file cannot be opened at all (permissions, a full disk).
    case cannotOpen(path: String, reason: String)
    /// The session is not in the journal.
    case unknownSession(String)
    /// A task with this identifier is already in the session.
    case duplicateTask(session: String, task: Int)
    case unknownTask(session: String, task: Int)
    /// A stored value does not decode (written by another build, or damaged).
    case unreadable(String)
    /// The journal's file system is full (SQLite's `SQLITE_FULL`): nothing was written.
    case storageFull(String)
    /// The journal's file system failed a read, write or sync (`SQLITE_IOERR`): nothing was written.
    case storageFailed(String)
    /// SQLite refused the operation.
    case failed(String)

    package var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open the journal at \(path): \(reason)"
        case .unknownSession(let session): "no background session \"\(session)\" in the journal"
        case .duplicateTask(let session, let task): "task \(task) of \"\(session)\" is already journaled"
        case .unknownTask(let session, let task): "no task \(task) in \"\(session)\""
        case .unreadable(let reason): "a journal record does not decode: \(reason)"
        case .storageFull(let reason): "the journal's disk is full: \(reason)"
        case .storageFailed(let reason): "the journal's disk failed: \(reason)"
        case .failed(let reason): "the journal refused the operation: \(reason)"
        }
    }

    /// The error an app or the `courier` tool is answered with: a full disk is `insufficientSpace`, a failing one
    /// `cannotWriteToFile`; anything else `unknown`, with this description.
    package var courierError: CourierError {
        switch self {
        case .storageFull: CourierError(.insufficientSpace, description)
        case .storageFailed: CourierError(.cannotWriteToFile, description)
        default: CourierError(.unknown, description)
        }
    }
}

/// What happened to a journal that could not be used when courierd started.
package struct JournalRecovery: Sendable, Equatable {
    package enum Reason: Error, Sendable, Equatable, CustomStringConvertible {
        /// Not a database, or damaged (a torn write, bytes overwritten).
        case corrupt(String)
        /// Migrations this build does not know: written by a newer courierd.
        case newerSchema(String)

        var tag: String {
            switch self {
            case .corrupt: "corrupt"
            case .newerSchema: "newer"
            }
        }

        package var description: String {
            switch self {
            case .corrupt(let detail): "corrupt (\(detail))"
            case .newerSchema(let migrations): "written by a newer courierd (migrations \(migrations))"
            }
        }
    }

    package var reason: Reason
    /// Where the old file was kept, for a newer courierd or for inspection.
    package var movedTo: URL?
}
