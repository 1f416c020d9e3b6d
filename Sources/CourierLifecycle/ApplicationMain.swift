import CourierConcurrency
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Application {
    private static let sharedStorage = LockedValue<Application?>(nil)

    /// The process's application: the one ``main(delegate:configuration:)`` created, or, if it has
    /// not been called, one with the default configuration created on first use. Callable from any
    /// thread; always the same instance.
    public static var shared: Application {
        self.sharedStorage.withLock { storage in
            if let application = storage {
                return application
            }
            let application = Application()
            storage = application
            return application
        }
    }

    /// The background session this process was launched for (`COURIER_BACKGROUND_LAUNCH=urlsession:<identifier>`),
    /// whether ``main(delegate:)`` read the variable (and removed it from the environment) or it is still there.
    package static var launchedForBackgroundSession: String? {
        let launched = self.sharedStorage.withLock { $0?.launchOptions }
        return (launched ?? LaunchOptions.fromProcessEnvironment()).backgroundLaunchReason?.urlSessionIdentifier
    }

    /// The command courierd runs to launch this process's app in the background: the shared application's
    /// ``Configuration/launchCommand`` once ``main(delegate:configuration:)`` made it, else this executable alone.
    package static var backgroundLaunchCommand: [String] {
        (self.sharedStorage.withLock { $0?.configuration } ?? Configuration()).resolvedLaunchCommand
    }

    /// Whether `application` is ``shared`` (without creating it).
    static func isShared(_ application: Application) -> Bool {
        self.sharedStorage.withLock { $0 === application }
    }

    /// Runs the process as an application until it is terminated, like `UIApplicationMain`. Never returns.
    ///
    /// Creates ``shared`` with `configuration`, reads the ``LaunchOptions`` from the environment
    /// (`COURIER_BACKGROUND_LAUNCH`, then removed from the environment), installs the signal handlers
    /// (SIGTSTP → background, SIGCONT → foreground, SIGTERM → terminate; see
    /// ``installSignalHandlers(_:)``), launches with `delegate`, and runs the main dispatch queue
    /// with `dispatchMain()`, where the delegate methods and expiration handlers run.
    ///
    /// The process ends through ``ProcessControl``: status 0 after a clean termination, 96 or 97
    /// from the watchdog (see ``ExitStatus``).
    ///
    /// - Precondition: called once, before ``shared`` is first used.
    public static func main(
        delegate: sending some ApplicationDelegate,
        configuration: Configuration = Configuration()
    ) -> Never {
        let box = DelegateBox(opening: delegate)
        let application = self.sharedStorage.withLock { storage in
            precondition(storage == nil, "Application.main must be called once, before Application.shared is used")
            let application = Application(configuration: configuration)
            storage = application
            return application
        }
        let options = LaunchOptions.fromProcessEnvironment()
        unsetenv(LaunchOptions.environmentVariable)
        unsetenv(LaunchOptions.remoteNotificationVariable)
        application.installSignalHandlers()
        application.launch(box, options: options)
        dispatchMain()
    }
}

extension LaunchOptions {
    /// Reads the launch options from this process's environment (`COURIER_BACKGROUND_LAUNCH`).
    public static func fromProcessEnvironment() -> LaunchOptions {
        guard let value = getenv(Self.environmentVariable) else {
            return LaunchOptions()
        }
        var environment = [Self.environmentVariable: String(cString: value)]
        environment[Self.remoteNotificationVariable] = getenv(Self.remoteNotificationVariable).map { String(cString: $0) }
        return LaunchOptions(environment: environment)
    }
}
