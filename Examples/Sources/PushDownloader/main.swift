// PushDownloader: an app whose server tells it, with a silent push, that there is something new to download, as an
// iOS app with remote notifications and a background session does, on Courier.
//
//   PushDownloader [--into DIR]
//
// Started by hand, it registers for remote notifications, prints its device token and how to send it a push, and
// stays (Ctrl-Z suspends it; courierd continues it for a push). A silent push whose payload names a `url` starts a
// background download of it into DIR (--into, else the directory it is started in), in the push's handler; when the
// app is not running, courierd launches it for the push, then again for the download's events, with the launch
// command the app declared: itself with `--into DIR`, so that a background launch saves where the user asked. What
// it prints then is in `courier logs PushDownloader`.
//
//   courier push TOKEN -n -d url=http://127.0.0.1:8080/episode.mp3
import Courier
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let sessionIdentifier = "com.example.push-downloader"

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Where downloads go: --into, else the directory the app is run from (a background launch gets --into, below).
let directory: String = {
    let arguments = CommandLine.arguments
    if let flag = arguments.firstIndex(of: "--into"), flag + 1 < arguments.count {
        return URL(fileURLWithPath: arguments[flag + 1]).standardizedFileURL.path
    }
    return FileManager.default.currentDirectoryPath
}()

/// Saves each finished download at the path in its task's description.
final class Downloads: SessionDownloadDelegate {
    private let finishEvents = Mutex<(@Sendable () -> Void)?>(nil)

    func keep(_ handler: @escaping @Sendable () -> Void) {
        finishEvents.withLock { $0 = handler }
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        guard let path = downloadTask.taskDescription,
            let status = (downloadTask.response as? HTTPURLResponse)?.statusCode, (200..<300).contains(status)
        else {
            return
        }
        try? FileManager.default.removeItem(atPath: path)
        do {
            try FileManager.default.moveItem(at: location, to: URL(fileURLWithPath: path))
            say("saved \(path)")
        } catch {
            say("cannot save \(path): \(error)")
        }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            say("download \(task.taskIdentifier) failed: \(error)")
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
        finishEvents.withLock { handler in
            defer { handler = nil }
            return handler
        }?()
    }
}

final class PushApp: ApplicationDelegate {
    let downloads = Downloads()
    lazy var session = Session(configuration: .background(withIdentifier: sessionIdentifier), delegate: downloads)

    // UIKit's shape of the launch, as a port from iOS keeps it.
    func application(
        _ application: Application,
        didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        application.registerForRemoteNotifications()
        return true
    }

    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        let token = deviceToken.map { String(format: "%02x", $0) }.joined()
        guard application.applicationState != .background else {
            return
        }
        say("device token \(token)")
        say("try: courier push \(token) -n -d url=http://127.0.0.1:8080/episode.mp3")
    }

    func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        say("cannot register for pushes: \(error)")
    }

    // UIKit's shape of a silent push: the payload as [AnyHashable: Any].
    func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        guard let text = userInfo["url"] as? String, let url = URL(string: text) else {
            completionHandler(.noData)
            return
        }
        let task = session.downloadTask(with: url)
        task.taskDescription = URL(fileURLWithPath: directory).appendingPathComponent(url.lastPathComponent).path
        task.resume()
        say("push: downloading \(url) in the background")
        completionHandler(task.error == nil ? .newData : .failed)
    }

    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        downloads.keep(completionHandler)
        _ = session
    }
}

// courierd launches the app in the background with this command: the executable, and where to save.
var configuration = Application.Configuration()
configuration.launchCommand = [
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path, "--into", directory,
]
Application.main(delegate: PushApp(), configuration: configuration)
