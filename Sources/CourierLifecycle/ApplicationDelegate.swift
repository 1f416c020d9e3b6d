public import struct Foundation.Data

/// Receives the application's lifecycle transitions, like `UIApplicationDelegate`.
///
/// Every method has an empty default implementation, so a delegate implements only what it needs.
///
/// **Threading.** Every method is called on the application's callback queue — the main dispatch
/// queue (`DispatchQueue.main`) unless ``Application/Configuration/callbackQueue`` says otherwise —
/// one at a time and never concurrently, so a delegate may keep mutable state confined to that
/// queue. This is why a delegate need not be `Sendable`: it is handed over with `sending` and is
/// only ever used on that queue. Expiration handlers of background tasks run on the same queue.
///
/// **Order.** `applicationDidFinishLaunching` comes first, exactly once. After it, the methods
/// follow the transitions, each once per transition:
/// - foreground launch: `applicationDidBecomeActive`;
/// - entering the background: `applicationWillResignActive`, then `applicationDidEnterBackground`;
/// - returning to the foreground: `applicationWillEnterForeground`, then `applicationDidBecomeActive`;
/// - termination: (`applicationWillResignActive`, `applicationDidEnterBackground` if it was active,)
///   then `applicationWillTerminate` once every background task has ended, at most once.
///
/// **Time limits.** `applicationDidEnterBackground` and `applicationWillTerminate` must return within
/// ``Application/Configuration/delegateCallTimeLimit`` (5 s by default) or the watchdog terminates
/// the process with ``Application/ExitStatus/delegateTimeout``. Start long work on another thread
/// and wrap it in a background task instead.
public protocol ApplicationDelegate: AnyObject {
    /// Called once, first, when the application has launched. `options` says whether the process
    /// was launched into the background and why.
    func applicationDidFinishLaunching(_ application: Application, options: LaunchOptions)

    /// Called each time the application has become active (in the foreground, receiving events).
    func applicationDidBecomeActive(_ application: Application)

    /// Called each time the application is about to leave the active state, before
    /// `applicationDidEnterBackground`.
    func applicationWillResignActive(_ application: Application)

    /// Called each time the application has entered the background: its background time budget is
    /// running. Begin background tasks here for work that must finish; when this method has returned
    /// and no background task remains, the application is suspended. Must return within the
    /// delegate time limit (5 s by default).
    func applicationDidEnterBackground(_ application: Application)

    /// Called each time the application is about to return from the background to the foreground,
    /// before `applicationDidBecomeActive`.
    func applicationWillEnterForeground(_ application: Application)

    /// Called at most once, when the application is about to exit after ``Application/terminate()``
    /// or SIGTERM, once every background task has ended. Must return within the delegate time limit.
    func applicationWillTerminate(_ application: Application)

    /// courierd launched the application because the background session `identifier` has events to deliver: once,
    /// right after the launch. Create the session with that identifier and a delegate; its missed events follow,
    /// then `urlSessionDidFinishEvents(forBackgroundURLSession:)`, where you call `completionHandler` (once, from any
    /// thread). The application holds a background task (within the budget) until you do.
    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    )

    /// A background fetch: once per fetch, on the callback queue — after a launch for one
    /// (`COURIER_BACKGROUND_LAUNCH=fetch`), or when ``Application/performBackgroundFetch(completion:)`` asks (courierd
    /// waking a running app, `courier fetch simulate`). Fetch, then call `completionHandler` once, from any thread,
    /// with what you found, within ``Application/Configuration/backgroundFetchTimeLimit`` (30 s); the application
    /// holds a background task until then. The default answers ``BackgroundFetchResult/noData`` at once.
    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    )

    /// courierd registered the application for remote notifications: once per
    /// ``Application/registerForRemoteNotifications()`` that succeeded. Hand `deviceToken` (32 bytes, stable for this
    /// app and user) to your server; `courier push <hex of the token>` sends to it.
    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data)

    /// Registering for remote notifications failed (courierd could not be reached or started): once per
    /// ``Application/registerForRemoteNotifications()`` that failed.
    func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: any Error)

    /// A silent push (`content-available`) arrived: once per delivery, on the callback queue — in a running
    /// application at once, in a suspended one after courierd resumed it (it stays in the background), in one that was
    /// not running after courierd launched it (`COURIER_BACKGROUND_LAUNCH=remote-notification`). Pushes that arrived
    /// while one was waiting are coalesced into one delivery of the newest. `userInfo` is the push's JSON payload.
    /// Do the work, then call `completionHandler` once, from any thread, within
    /// ``Application/Configuration/backgroundFetchTimeLimit`` (30 s); the application holds a background task until
    /// then. The default answers ``BackgroundFetchResult/noData`` at once.
    func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [String: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    )

    // MARK: The iOS shapes

    /// UIKit's shape of ``applicationDidFinishLaunching(_:options:)``, for code ported from iOS: called by its default
    /// implementation (so implement one of the two), once, with the options as a dictionary (nil for an ordinary
    /// launch). The return value is ignored, as UIKit ignores it for these launches.
    func application(
        _ application: Application,
        didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool

    /// UIKit's shape of ``application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`` (`userInfo` as
    /// `[AnyHashable: Any]`), for code ported from iOS: called by that method's default implementation (so implement
    /// one of the two), once per delivery, with the same contract.
    func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    )
}

extension ApplicationDelegate {
    public func applicationDidFinishLaunching(_ application: Application, options: LaunchOptions) {
        _ = self.application(application, didFinishLaunchingWithOptions: options.dictionary)
    }
    public func application(
        _ application: Application,
        didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        true
    }
    public func applicationDidBecomeActive(_ application: Application) {}
    public func applicationWillResignActive(_ application: Application) {}
    public func applicationDidEnterBackground(_ application: Application) {}
    public func applicationWillEnterForeground(_ application: Application) {}
    public func applicationWillTerminate(_ application: Application) {}
    public func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        completionHandler()
    }
    public func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        completionHandler(.noData)
    }
    public func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {}
    public func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: any Error) {}
    public func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [String: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        self.application(
            application,
            didReceiveRemoteNotification: userInfo as [AnyHashable: Any],
            fetchCompletionHandler: completionHandler
        )
    }
    public func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        completionHandler(.noData)
    }
}
