import CourierConcurrency
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The Unix signals an ``Application`` can turn into lifecycle transitions.
public struct LifecycleSignals: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// SIGTSTP (Ctrl-Z in a terminal): enter the background; the process stops (SIGSTOP) once no
    /// background task remains.
    public static let terminalStop = LifecycleSignals(rawValue: 1 << 0)
    /// SIGCONT (`fg`, `bg`, `kill -CONT`): return to the foreground.
    public static let `continue` = LifecycleSignals(rawValue: 1 << 1)
    /// SIGTERM: terminate, with the background budget as a deadline.
    public static let terminate = LifecycleSignals(rawValue: 1 << 2)

    public static let all: LifecycleSignals = [.terminalStop, .continue, .terminate]

    var signalNumbers: [(LifecycleSignals, Int32)] {
        [(.terminalStop, SIGTSTP), (.continue, SIGCONT), (.terminate, SIGTERM)].filter { self.contains($0.0) }
    }
}

extension Application {
    /// Turns real signals into transitions of this application (``main(delegate:configuration:)``
    /// calls it with ``LifecycleSignals/all``):
    /// - SIGTSTP → ``enterBackground()``; once no background task remains the process really stops
    ///   (``ProcessControl/suspend``: SIGSTOP), which is "suspended".
    /// - SIGCONT → ``enterForeground()``: `applicationWillEnterForeground`, then active — unless courierd sent it
    ///   (the sender's pid tells) to resume the suspended process for background work (a fetch, a push), which
    ///   stays in the background.
    /// - SIGTERM → ``terminate()``: background with the budget as a deadline, then
    ///   `applicationWillTerminate` and exit status 0 once the tasks have ended.
    ///
    /// Each signal's default action is ignored first (`signal(SIG, SIG_IGN)`), the signals are
    /// blocked on the calling thread, and a dispatch signal source on a private queue receives them;
    /// SIGCONT instead gets a handler that passes its sender's pid to that queue through a pipe.
    /// This method returns only once libdispatch has registered the sources (up to 10 s), so a
    /// signal sent after it returns — for example once `applicationDidBecomeActive` has run — is not
    /// lost. Once per process: a signal already handled for an application is not installed again.
    /// Programs run by a swift-service-lifecycle `ServiceGroup`
    /// should leave SIGTERM to the group (pass `[.terminalStop, .continue]`) and use
    /// ``ApplicationLifecycleService``.
    public func installSignalHandlers(_ signals: LifecycleSignals = .all) {
        LifecycleSignalSources.install(signals, for: self)
    }
}

/// The process-wide dispatch signal sources.
enum LifecycleSignalSources {
    /// `@unchecked Sendable`: holds dispatch signal sources only to keep them alive; libdispatch
    /// makes them thread-safe, the Swift overlay just does not mark their protocol `Sendable`. The
    /// array is only touched under `installed`'s lock.
    private struct Sources: @unchecked Sendable {
        var handled: LifecycleSignals = []
        var sources: [any DispatchSourceSignal] = []
        var continueSource: (any DispatchSourceRead)?
    }

    private static let installed = LockedValue(Sources())
    private static let queue = DispatchQueue(label: "courier.lifecycle.signals")

    static func install(_ signals: LifecycleSignals, for application: Application) {
        let registered = DispatchGroup()
        self.installed.withLock { installed in
            let wanted = signals.subtracting(installed.handled)
            var mask = sigset_t()
            sigemptyset(&mask)
            for (_, number) in wanted.signalNumbers {
                sigaddset(&mask, number)
            }
            // SIGCONT has a handler of its own, which learns who sent it (ContinueSignal).
            let viaDispatch = wanted.subtracting(.continue)
            pthread_sigmask(SIG_BLOCK, &mask, nil)
            if wanted.contains(.continue) {
                installed.continueSource = ContinueSignal.install(on: self.queue, for: application)
            }
            for (kind, number) in viaDispatch.signalNumbers {
                _ = signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: self.queue)
                source.setEventHandler { [weak application] in
                    guard let application else { return }
                    switch kind {
                    case .terminalStop: application.enterBackground()
                    default: application.terminate()
                    }
                }
                registered.enter()
                source.setRegistrationHandler { registered.leave() }
                source.resume()
                installed.sources.append(source)
            }
            installed.handled.formUnion(wanted)
        }
        // libdispatch registers a signal source asynchronously, and only then replaces SIG_IGN with
        // its own handler. Until it has, a signal that reaches a thread not blocking it is discarded
        // — and `dispatchMain()` parks the main thread in `sigsuspend` with an empty mask. So do
        // not return (and let the application launch) before every source is registered.
        if registered.wait(timeout: .now() + .seconds(10)) == .timedOut {
            application.logger.error("signal sources not registered within 10 s; early signals may be lost")
        }
    }
}
