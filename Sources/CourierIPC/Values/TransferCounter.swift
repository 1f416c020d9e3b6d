import Synchronization

/// The bytes this process's tasks have moved (sent and received, as their progress is reported), for courierd's record
/// of what a background fetch or push handler transferred. One atomic add per progress report.
package enum TransferCounter {
    private static let total = Atomic<Int64>(0)

    package static func add(_ bytes: Int64) {
        total.add(bytes, ordering: .relaxed)
    }

    /// Bytes moved since the process started.
    package static var bytes: Int64 {
        total.load(ordering: .relaxed)
    }
}
