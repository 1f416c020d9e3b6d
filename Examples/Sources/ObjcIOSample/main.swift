// The sample app of objc.io's "Multitasking in iOS 7" (background fetch, a silent push that queues a download with
// the background transfer service, and the relaunch for its events), written in Swift as for iOS, then ported to
// Courier by renaming types only. This file compiles as the proof (scripts/docs.sh builds it); it is not meant to
// run against the article's placeholder server.
//
// The renames, and nothing else, from the iOS version:
//
//   import UIKit                                 -> import Courier (+ FoundationNetworking on Linux)
//   UIResponder, UIApplicationDelegate           -> ApplicationDelegate (and no `window`)
//   @main (UIApplicationMain)                    -> Application.main(delegate:) at the end
//   UIApplication                                -> Application
//   UIApplication.LaunchOptionsKey               -> Application.LaunchOptionsKey
//   UIApplication.backgroundFetchIntervalMinimum -> Application.backgroundFetchIntervalMinimum
//   UIBackgroundFetchResult                      -> BackgroundFetchResult
//   URLSession, URLSessionConfiguration          -> Session, SessionConfiguration
//   URLSessionDownloadDelegate                   -> SessionDownloadDelegate
//   URLSessionDownloadTask                       -> DownloadTask
//
// One addition: `@unchecked Sendable` on the delegate class. Session delegates are Sendable (as Foundation's are);
// on iOS the class is so already, being main-actor isolated through UIApplicationDelegate. Here its state is touched
// on the main queue only: the application's calls come there, and the session's too (`delegateQueue: .main`, where
// the article's nil made a race between the two on iOS as well).
//
// Written in the Swift 5 language mode, as the iOS code it stands for was (Package.swift).
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

typealias CompletionHandlerType = () -> Void

final class AppDelegate: ApplicationDelegate, SessionDownloadDelegate, @unchecked Sendable {
    var completionHandlerDictionary: [String: CompletionHandlerType] = [:]

    // "The documentation discourages instantiating several sessions with the same identifier": made once.
    lazy var backgroundURLSession: Session = {
        let identifier = "io.objc.backgroundTransferExample"
        let sessionConfig = SessionConfiguration.background(withIdentifier: identifier)
        return Session(configuration: sessionConfig, delegate: self, delegateQueue: .main)
    }()

    // MARK: Background fetch

    func application(
        _ application: Application,
        didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?
    ) -> Bool {
        application.setMinimumBackgroundFetchInterval(Application.backgroundFetchIntervalMinimum)
        NSLog("Launched in background %d", application.applicationState == .background ? 1 : 0)
        return true
    }

    func application(
        _ application: Application,
        performFetchWithCompletionHandler completionHandler: @escaping (BackgroundFetchResult) -> Void
    ) {
        let session = Session(configuration: SessionConfiguration.default)
        let url = URL(string: "http://yourserver.com/data.json")!
        let task = session.dataTask(with: url) { data, response, error in
            if error != nil {
                completionHandler(.failed)
                return
            }
            // Process the data, then:
            completionHandler(.newData)
        }
        // Start the task
        task.resume()
    }

    // MARK: Remote notifications

    func application(
        _ application: Application,
        didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (BackgroundFetchResult) -> Void
    ) {
        NSLog("Received remote notification with userInfo %@", "\(userInfo)")
        let contentID = userInfo["content-id"] as? String ?? ""
        let downloadURLString = "http://yourserver.com/downloads/\(contentID).mp3"
        let downloadURL = URL(string: downloadURLString)!
        let request = URLRequest(url: downloadURL)
        let task = backgroundURLSession.downloadTask(with: request)
        task.taskDescription = "Podcast Episode \(contentID)"
        task.resume()
        completionHandler(.newData)
    }

    // MARK: SessionDownloadDelegate

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        NSLog("downloadTask:%@ didFinishDownloadingToURL:%@", downloadTask.taskDescription ?? "", location.path)
        // Copy file to your app's storage with FileManager
        // ...
        // Notify your UI
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {}

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {}

    // MARK: The relaunch for the session's events

    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping () -> Void
    ) {
        // You must re-establish a reference to the background session, or the SessionDownloadDelegate and
        // SessionDelegate methods will not be called as no delegate is attached to the session.
        let backgroundSession = backgroundURLSession
        NSLog("Rejoining session with identifier %@ %@", identifier, "\(backgroundSession)")
        // Store the completion handler to update your UI after processing session events
        addCompletionHandler(completionHandler, forSession: identifier)
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
        NSLog("Background URL session %@ finished events.", "\(session)")
        if let identifier = session.configuration.identifier {
            // Call the handler we stored in application(_:handleEventsForBackgroundURLSession:completionHandler:)
            callCompletionHandler(forSession: identifier)
        }
    }

    func addCompletionHandler(_ handler: @escaping CompletionHandlerType, forSession identifier: String) {
        if completionHandlerDictionary[identifier] != nil {
            NSLog("Error: Got multiple handlers for a single session identifier. This should not happen.")
        }
        completionHandlerDictionary[identifier] = handler
    }

    func callCompletionHandler(forSession identifier: String) {
        if let handler = completionHandlerDictionary.removeValue(forKey: identifier) {
            NSLog("Calling completion handler for session %@", identifier)
            handler()
        }
    }
}

Application.main(delegate: AppDelegate())
