import CourierConcurrency
import CourierLifecycle
import Dispatch

/// A process control that stops and kills nothing: it records suspensions, exits and watchdog
/// reports so that unit tests can check them.
final class RecordingProcessControl: Sendable {
    enum Event: Equatable {
        case suspend
        case exit(Application.ExitStatus)
        case terminate(WatchdogReport)
    }

    private let recorded = LockedValue<[Event]>([])
    private let suspensions = DispatchSemaphore(value: 0)

    var events: [Event] {
        self.recorded.withLock { $0 }
    }

    var suspendCount: Int {
        self.events.filter { $0 == .suspend }.count
    }

    var exits: [Application.ExitStatus] {
        self.events.compactMap { if case .exit(let status) = $0 { status } else { nil } }
    }

    var reports: [WatchdogReport] {
        self.events.compactMap { if case .terminate(let report) = $0 { report } else { nil } }
    }

    /// Waits for the next suspension not yet waited for (for suspensions caused from other threads).
    func waitForSuspension(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        return self.suspensions.wait(timeout: .now() + Double(seconds) + Double(attoseconds) / 1e18) == .success
    }

    var processControl: ProcessControl {
        ProcessControl(
            suspend: {
                self.recorded.withLock { $0.append(.suspend) }
                self.suspensions.signal()
            },
            exit: { status in self.recorded.withLock { $0.append(.exit(status)) } },
            terminate: { report in self.recorded.withLock { $0.append(.terminate(report)) } }
        )
    }
}
