/// What courierd has done since it started and what it holds now, as `courier daemon status --json` shows it: the
/// same figures an in-process session gives swift-metrics (`courier_tasks_completed_total` by outcome,
/// `courier_task_failures_total` by code, bytes), plus its retries and its tasks by state.
package struct DaemonFigures: Codable, Sendable, Equatable {
    /// Body bytes of the tasks that ended since courierd started.
    package var bytesReceived: Int64 = 0
    package var bytesSent: Int64 = 0
    /// Tasks that ended, by outcome: `success`, `failure`, `cancelled`.
    package var completed: [String: Int] = [:]
    /// Tasks that failed, by ``CourierError/Code-swift.struct`` name.
    package var failures: [String: Int] = [:]
    /// Attempts made again after a failure that may pass.
    package var retries = 0
    /// The journaled tasks of the sessions courierd runs now, by state: `waiting`, `starting`, `running`, `suspended`.
    package var tasks: [String: Int] = [:]
    /// Transfers holding one of courierd's slots (`--max-transfers`), and attempts waiting for one.
    package var runningTransfers = 0
    package var waitingTransfers = 0

    package init() {}
}
