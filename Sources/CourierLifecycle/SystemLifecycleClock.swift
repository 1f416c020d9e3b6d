import Dispatch

/// The real clock: `CLOCK_MONOTONIC` through `DispatchTime`, timers on a private serial dispatch queue.
///
/// Timers fire on that private queue (never on the main queue), so the watchdog fires even while
/// the main queue is blocked. Time spent while the process is stopped (SIGSTOP) still passes, and a
/// timer whose deadline passed during the stop fires as soon as the process continues.
public struct SystemLifecycleClock: LifecycleClock {
    private let queue: DispatchQueue

    public init() {
        self.queue = DispatchQueue(label: "courier.lifecycle.clock")
    }

    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    public func schedule(at deadline: Duration, _ action: @escaping @Sendable () -> Void) -> any LifecycleClockTimer {
        let (seconds, attoseconds) = max(deadline, .zero).components
        let nanoseconds = UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        let source = DispatchSource.makeTimerSource(queue: self.queue)
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: nanoseconds), leeway: .milliseconds(1))
        source.setEventHandler {
            source.cancel()
            action()
        }
        source.activate()
        return SystemLifecycleClockTimer(source: source)
    }
}

/// A timer of ``SystemLifecycleClock``.
///
/// `@unchecked Sendable`: the only stored property is a dispatch timer source, which libdispatch
/// makes safe to cancel from any thread; the Swift overlay just does not mark its protocol
/// `Sendable`. Nothing else is stored.
struct SystemLifecycleClockTimer: LifecycleClockTimer, @unchecked Sendable {
    let source: any DispatchSourceTimer

    func cancel() {
        self.source.cancel()
    }
}
