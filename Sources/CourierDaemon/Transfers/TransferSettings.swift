package import Courier
package import Foundation

/// How courierd paces its background transfers: retries, checkpoints and condition checks.
package struct TransferSettings: Sendable {
    package var retryPolicy = RetryPolicy()
    package var conditions = ConditionReader()
    /// A running transfer is checkpointed (and its progress journaled for the app) at most this long apart…
    package var checkpointInterval: TimeInterval = 1
    /// …or after this many bytes, whichever comes first.
    package var checkpointBytes: Int64 = 16 << 20
    /// How often a task waiting for power or an unmetered network looks again.
    package var conditionPollInterval: TimeInterval = 10
    /// How long a batch of finished downloads handed over unflushed gathers before one flush while no transfer
    /// runs (``FileFlusher``)…
    package var fileFlushDelay: TimeInterval = 0.25
    /// …and how long at most while transfers run.
    package var fileFlushPatience: TimeInterval = 5
    /// courierd's `--limit-rate`: what all its transfers receive together, every session's included.
    package var bandwidthLimiter: BandwidthLimiter?
    /// courierd's `--max-transfers` and the priorities it honours across all sessions.
    package var slots = TransferSlots()
    /// What the tasks did since courierd started (``DaemonFigures``).
    package var counters = DaemonCounters()

    package init() {}
}
