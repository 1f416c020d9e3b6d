import Courier
import Foundation

/// The `courier` tool launched by courierd in the background (`COURIER_BACKGROUND_LAUNCH=urlsession:courier.transfers`)
/// for the events of its background session: an ``Application`` whose delegate opens the session again, saves what
/// finished (``BackgroundSaver``), and then, as an iOS app does, hands the events' completion handler back and is
/// suspended until courierd continues it for more events. It terminates once no transfer of the session is left, so
/// that nothing lingers; courierd launches it again for the next transfers that end.
///
/// Its standard output and error are courierd's log for the app: `courier logs courier`.
enum BackgroundDelivery {
    static func main() -> Never {
        Application.main(delegate: DeliveryApplication())
    }
}

/// The application delegate of a background launch. Its methods run on the main queue, one at a time.
private final class DeliveryApplication: ApplicationDelegate {
    private var session: Session?
    private let saver = BackgroundSaver(whenIdle: {
        BackgroundSaver.say("courier: no background transfer left; exiting")
        CompletionHook.waitForAll()
        Application.shared.terminate()
    })

    func applicationDidFinishLaunching(_ application: Application, options: LaunchOptions) {
        let reason = options.backgroundLaunchReason
        guard reason?.urlSessionIdentifier == BackgroundTransfers.sessionIdentifier else {
            // A fetch or a push: the tool registers for neither, so there is nothing to do.
            BackgroundSaver.say("courier: launched for \(reason?.rawValue ?? "?"), which it has no work for; exiting")
            application.terminate()
            return
        }
        BackgroundSaver.say("courier: launched for the events of \(BackgroundTransfers.sessionIdentifier)")
    }

    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        saver.awaitReplay(completion: completionHandler)
        session = Session(configuration: BackgroundTransfers.configuration(), delegate: saver)
        if let failure = session?.waitForBackgroundOpening() {
            BackgroundSaver.say("courier: cannot open \(identifier): \(failure.message); exiting")
            application.terminate()
            completionHandler()
        }
    }
}
