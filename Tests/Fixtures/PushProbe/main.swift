// An app that registers for background fetch and remote notifications, for the end-to-end tests of courierd's fetch
// and push (Tests/CourierDaemonTests/FetchAndPushTests.swift). It logs every delegate call (one JSON object a line):
// - launched by hand it registers and waits (SIGTSTP suspends it, SIGCONT brings it back, SIGKILL ends it);
// - a push with a `content-id` starts a background download of `<server>/bytes/<size>` in its handler; launched for a
//   push (`COURIER_BACKGROUND_LAUNCH=remote-notification`) it exits once the handler is done;
// - relaunched for the background session's events it recreates the session, logs the file, and exits once
//   `urlSessionDidFinishEvents` has run.
//
//   PushProbe --log FILE --server URL [--fetch-result newData|noData|failed|hang] [--time-limit SECONDS]
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let identifier = "com.example.probe.push"

struct Options: Sendable {
    var log = ""
    var server = ""
    var fetchResult = "newData"
    /// The fetch and push handlers' time limit.
    var timeLimit = 30.0

    init(_ arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--log": log = value
            case "--server": server = value
            case "--fetch-result": fetchResult = value
            case "--time-limit": timeLimit = Double(value)!
            default: fatalError("unknown argument \(argument)")
            }
        }
    }
}

/// Appends one JSON line to the log (O_APPEND: whole lines, across the processes of every launch).
func write(_ fields: [String: Any], to path: String) {
    var fields = fields
    fields["pid"] = Int(getpid())
    guard var line = try? JSONSerialization.data(withJSONObject: fields, options: .sortedKeys) else {
        return
    }
    line.append(0x0A)
    let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o600)
    _ = line.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}

/// The background session's delegate: logs the finished download and ends the relaunch once the events are over.
final class Downloads: SessionDownloadDelegate, @unchecked Sendable {
    // @unchecked Sendable: `completion` is touched only on the session's serial delegate queue.
    let log: String
    var completion: (@Sendable () -> Void)?

    init(log: String) {
        self.log = log
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        let size = (try? FileManager.default.attributesOfItem(atPath: location.path)[.size] as? Int) ?? -1
        write(["event": "downloaded", "bytes": size, "description": downloadTask.taskDescription ?? ""], to: log)
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        write(["event": "completed", "error": error.map { "\($0)" } ?? ""], to: log)
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
        write(["event": "didFinishEvents"], to: log)
        completion?()
        completion = nil
        Application.shared.terminate()
    }
}

final class ProbeDelegate: ApplicationDelegate {
    let options: Options
    let downloads: Downloads
    var session: Session?
    var launchReason: String?

    init(options: Options) {
        self.options = options
        downloads = Downloads(log: options.log)
    }

    func log(_ fields: [String: Any]) {
        write(fields, to: options.log)
    }

    func backgroundSession() -> Session {
        if let session {
            return session
        }
        let made = Session(configuration: .background(withIdentifier: identifier), delegate: downloads)
        session = made
        return made
    }

    func applicationDidFinishLaunching(_ application: Application, options launch: LaunchOptions) {
        launchReason = launch.backgroundLaunchReason?.rawValue
        var fields: [String: Any] = ["event": "launched", "reason": launchReason ?? "foreground"]
        if let payload = launch.remoteNotification {
            fields["payload"] = String(decoding: payload, as: UTF8.self)
        }
        log(fields)
        application.setMinimumBackgroundFetchInterval(.minimum)
        application.registerForRemoteNotifications()
    }

    func applicationDidBecomeActive(_ application: Application) {
        log(["event": "active"])
    }

    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        log(["event": "token", "token": deviceToken.map { String(format: "%02x", $0) }.joined()])
    }

    func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        log(["event": "registrationFailed", "error": "\(error)"])
    }

    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        log(["event": "fetch", "state": "\(application.applicationState)"])
        if let result = BackgroundFetchResult(rawValue: options.fetchResult) {
            completionHandler(result)
        }
    }

    func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [String: Any],
        fetchCompletionHandler completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        let contentID = userInfo["content-id"] as? String
        log(["event": "push", "content-id": contentID ?? "", "state": "\(application.applicationState)"])
        if let contentID {
            let url = URL(string: "\(options.server)/bytes/\(4096 + (Int(contentID) ?? 0))?delay=1500")!
            let task = backgroundSession().downloadTask(with: url)
            task.taskDescription = "content \(contentID)"
            task.resume()
            log(["event": "enqueued", "url": url.absoluteString])
        }
        // Launched for the push, it exits once its handler is done: termination is asked for first, so that the
        // handler's end does not suspend it (with no background task left, an app in the background is suspended).
        if launchReason == BackgroundLaunchReason.remoteNotification.rawValue {
            log(["event": "exit"])
            application.terminate()
        }
        completionHandler(contentID == nil ? .noData : .newData)
    }

    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        log(["event": "relaunched", "session": identifier])
        downloads.completion = completionHandler
        _ = backgroundSession()
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
var configuration = Application.Configuration()
configuration.backgroundFetchTimeLimit = .milliseconds(Int(options.timeLimit * 1000))
// Launched again (for a fetch or a push) with what it needs to run, none of which starts work.
configuration.launchCommand = [ThisExecutable.path] + CommandLine.arguments.dropFirst()
Application.main(delegate: ProbeDelegate(options: options), configuration: configuration)
