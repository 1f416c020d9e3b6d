extension Application {
    /// The exit statuses an application run by ``Application/main(delegate:configuration:)`` ends with.
    ///
    /// - 0 (``normal``): terminated cleanly — ``Application/terminate()`` or SIGTERM, every background
    ///   task ended, `applicationWillTerminate` returned.
    /// - 96 (``backgroundTimeExpired``): the watchdog — the background time budget ran out with
    ///   background tasks still open.
    /// - 97 (``delegateTimeout``): the watchdog — `applicationDidEnterBackground` or
    ///   `applicationWillTerminate` did not return within the delegate time limit (5 s by default).
    ///
    /// The two watchdog statuses come with a report on standard error that names every open
    /// background task (see ``WatchdogReport``). They sit below 128 so that they cannot be mistaken
    /// for a shell's "killed by signal N" statuses, and outside `sysexits.h`'s 64–78.
    public struct ExitStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32

        public init(rawValue: Int32) {
            self.rawValue = rawValue
        }

        /// 0: terminated cleanly.
        public static let normal = ExitStatus(rawValue: 0)
        /// 96: the background time budget ran out with background tasks still open.
        public static let backgroundTimeExpired = ExitStatus(rawValue: 96)
        /// 97: a delegate method with a time limit (`applicationDidEnterBackground`,
        /// `applicationWillTerminate`) overran it.
        public static let delegateTimeout = ExitStatus(rawValue: 97)

        public var description: String {
            String(self.rawValue)
        }
    }
}
