import CourierLifecycle
import Dispatch

/// An application on a virtual clock, with its own callback queue and a recording process control
/// and delegate: nothing in a unit test waits for real time, stops or exits.
final class LifecycleHarness: Sendable {
    let clock: ManualLifecycleClock
    let queue: DispatchQueue
    let control = RecordingProcessControl()
    let delegate = RecordingDelegate()
    let application: Application
    private let queueKey = DispatchSpecificKey<Int>()

    init(
        budget: Duration = .seconds(180),
        expirationWarning: Duration = .seconds(5),
        delegateCallTimeLimit: Duration = .seconds(5),
        start: Duration = .seconds(1000)
    ) {
        self.clock = ManualLifecycleClock(now: start)
        self.queue = DispatchQueue(label: "courier.lifecycle.tests.callbacks")
        self.queue.setSpecific(key: self.queueKey, value: 1)
        self.application = Application(
            configuration: .init(
                backgroundTimeBudget: budget,
                expirationWarning: expirationWarning,
                delegateCallTimeLimit: delegateCallTimeLimit,
                clock: self.clock,
                callbackQueue: self.queue,
                processControl: self.control.processControl
            )
        )
    }

    /// Whether the caller is running on the application's callback queue.
    var isOnCallbackQueue: Bool {
        DispatchQueue.getSpecific(key: self.queueKey) == 1
    }

    /// Waits until everything queued on the callback queue so far has run, including what those
    /// blocks queue in turn (transitions queue at most a few levels deep).
    func drain() {
        for _ in 0..<4 {
            self.queue.sync {}
        }
    }

    /// Launches (into the foreground unless `options` says otherwise) and waits for it.
    func launch(_ options: LaunchOptions = .foreground) {
        self.application.launch(delegate: self.delegate, options: options)
        self.drain()
    }

    func enterBackground() {
        self.application.enterBackground()
        self.drain()
    }

    func enterForeground() {
        self.application.enterForeground()
        self.drain()
    }

    func terminate() {
        self.application.terminate()
        self.drain()
    }

    /// Advances the virtual clock, then lets the callback queue run what fell due.
    func advance(by duration: Duration) {
        self.clock.advance(by: duration)
        self.drain()
    }
}
