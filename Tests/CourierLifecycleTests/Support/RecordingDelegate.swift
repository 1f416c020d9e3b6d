import CourierConcurrency
import CourierLifecycle

/// An application delegate that records every call (with the state seen during it) and runs an
/// optional hook in `applicationDidEnterBackground`. `Sendable` (its state is behind a mutex), so a
/// test can hand it to `launch(delegate:)` and keep reading it.
final class RecordingDelegate: ApplicationDelegate, Sendable {
    struct Call: Equatable, CustomStringConvertible {
        var name: String
        var state: ApplicationState

        var description: String { "\(self.name)[\(self.state)]" }
    }

    private struct State {
        var calls: [Call] = []
        var launchOptions: [LaunchOptions] = []
        var didEnterBackground: (@Sendable (Application) -> Void)?
        var willTerminate: (@Sendable (Application) -> Void)?
        var performFetch: (@Sendable (Application, @escaping @Sendable (BackgroundFetchResult) -> Void) -> Void)?
    }

    private let state = LockedValue(State())

    /// Runs inside `applicationDidEnterBackground`, on the callback queue.
    func onDidEnterBackground(_ hook: @escaping @Sendable (Application) -> Void) {
        self.state.withLock { $0.didEnterBackground = hook }
    }

    /// Runs inside `applicationWillTerminate`, on the callback queue.
    func onWillTerminate(_ hook: @escaping @Sendable (Application) -> Void) {
        self.state.withLock { $0.willTerminate = hook }
    }

    /// Runs inside `application(_:performFetchWithCompletionHandler:)`, on the callback queue, with the handler
    /// (which it may keep, call later or never); without it, the fetch answers `.noData` at once.
    func onPerformFetch(
        _ hook: @escaping @Sendable (Application, @escaping @Sendable (BackgroundFetchResult) -> Void) -> Void
    ) {
        self.state.withLock { $0.performFetch = hook }
    }

    var calls: [Call] {
        self.state.withLock { $0.calls }
    }

    /// The names of the calls, in order.
    var names: [String] {
        self.calls.map(\.name)
    }

    var launchOptions: [LaunchOptions] {
        self.state.withLock { $0.launchOptions }
    }

    private func record(_ name: String, _ application: Application) {
        let call = Call(name: name, state: application.applicationState)
        self.state.withLock { $0.calls.append(call) }
    }

    func applicationDidFinishLaunching(_ application: Application, options: LaunchOptions) {
        self.state.withLock { $0.launchOptions.append(options) }
        self.record("didFinishLaunching", application)
    }

    func applicationDidBecomeActive(_ application: Application) {
        self.record("didBecomeActive", application)
    }

    func applicationWillResignActive(_ application: Application) {
        self.record("willResignActive", application)
    }

    func applicationDidEnterBackground(_ application: Application) {
        self.record("didEnterBackground", application)
        self.state.withLock { $0.didEnterBackground }?(application)
    }

    func applicationWillEnterForeground(_ application: Application) {
        self.record("willEnterForeground", application)
    }

    func applicationWillTerminate(_ application: Application) {
        self.record("willTerminate", application)
        self.state.withLock { $0.willTerminate }?(application)
    }

    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        self.record("performFetch", application)
        if let hook = self.state.withLock({ $0.performFetch }) {
            hook(application, completionHandler)
        } else {
            completionHandler(.noData)
        }
    }
}
