// BackgroundDownloader: a download manager whose downloads outlive it, written as an iOS app with a background
// session is, on Courier.
//
//   BackgroundDownloader URL... [--into DIR]
//
// Started by hand, it hands each URL to courierd as a download task of its background session (the destination path
// in the task's description), prints each file as it is saved, and exits once all of them have ended: status 0 when
// every one was saved. Closed or killed meanwhile (Ctrl-C, a closed terminal, SIGKILL), it leaves them to courierd,
// which goes on and, when they end, launches it again in the background, without arguments, to save the files: that
// instance recreates the session, hears the events it missed, hands the completion handler back, and is suspended
// (courierd continues it for later events, and reclaims it when the user starts the app again or once it is idle).
// What a relaunched instance prints is in `courier logs BackgroundDownloader`.
import Courier
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking  // HTTPURLResponse on Linux
#endif

let sessionIdentifier = "com.example.background-downloader"

/// One line on standard output, written at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The background session's delegate: saves each finished download at the path its task's description holds, and
/// says how each task ended. Its calls come one at a time on the session's delegate queue.
final class Downloads: SessionDownloadDelegate {
    private struct State {
        /// The tasks this run started and waits for (started by hand), and whether one failed.
        var waitingFor: Set<Int> = []
        var failed = false
        /// The handler of a background launch, called once the missed events have all arrived.
        var finishEvents: (@Sendable () -> Void)?
        var lastPercent: [Int: Int] = [:]
    }

    private let state = Mutex(State())

    func wait(for task: Int) {
        state.withLock { _ = $0.waitingFor.insert(task) }
    }

    func keep(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.finishEvents = handler }
    }

    func urlSession(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        guard totalBytesExpectedToWrite > 0 else {
            return
        }
        // A line every 25 %.
        let percent = Int(totalBytesWritten * 100 / totalBytesExpectedToWrite) / 25 * 25
        let changed = state.withLock { state in
            state.lastPercent.updateValue(percent, forKey: downloadTask.taskIdentifier) != percent
        }
        if changed && percent < 100 {
            say("task \(downloadTask.taskIdentifier): \(percent) % of \(totalBytesExpectedToWrite) bytes")
        }
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        // `location` is removed when this method returns: the file is moved now.
        guard let status = (downloadTask.response as? HTTPURLResponse)?.statusCode, (200..<300).contains(status) else {
            return  // Said in didCompleteWithError.
        }
        guard let path = downloadTask.taskDescription else {
            return
        }
        let destination = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            if FileManager.default.fileExists(atPath: destination.path) {
                try FileManager.default.removeItem(at: destination)
            }
            try FileManager.default.moveItem(at: location, to: destination)
            say("saved \(path)")
        } catch {
            say("task \(downloadTask.taskIdentifier): cannot save \(path): \(error)")
        }
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        let status = (task.response as? HTTPURLResponse)?.statusCode
        let failed = error != nil || !(200..<300).contains(status ?? 0)
        if let error = error as? CourierError {
            // A download that failed with resume data could go on with session.downloadTask(withResumeData:).
            say("task \(task.taskIdentifier): failed: \(error)")
        } else if failed {
            say("task \(task.taskIdentifier): failed: HTTP \(status.map(String.init) ?? "?")")
        }
        let (done, anyFailed) = state.withLock { state in
            state.failed = state.failed || (failed && state.waitingFor.contains(task.taskIdentifier))
            let waited = state.waitingFor.remove(task.taskIdentifier) != nil
            return (waited && state.waitingFor.isEmpty, state.failed)
        }
        if done {
            exit(anyFailed ? 1 : 0)
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
        say("the missed events are delivered")
        let handler = state.withLock { state in
            defer { state.finishEvents = nil }
            return state.finishEvents
        }
        handler?()
    }
}

final class Downloader: ApplicationDelegate {
    let downloads = Downloads()
    var session: Session?

    /// Started by hand: one download task per URL of the command line.
    func applicationDidFinishLaunching(_ application: Application, options: LaunchOptions) {
        guard !options.launchedIntoBackground else {
            return  // Launched by courierd: handleEventsForBackgroundURLSession comes next.
        }
        var arguments = Array(CommandLine.arguments.dropFirst())
        var directory = FileManager.default.currentDirectoryPath
        if let flag = arguments.firstIndex(of: "--into"), flag + 1 < arguments.count {
            directory = arguments[flag + 1]
            arguments.removeSubrange(flag...(flag + 1))
        }
        let urls = arguments.compactMap(URL.init(string:)).filter { $0.scheme != nil }
        guard !urls.isEmpty, urls.count == arguments.count else {
            say("usage: BackgroundDownloader URL... [--into DIR]")
            exit(64)
        }
        let session = Session(configuration: .background(withIdentifier: sessionIdentifier), delegate: downloads)
        self.session = session
        let into = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        for url in urls {
            let task = session.downloadTask(with: url)
            task.taskDescription = into.appendingPathComponent(url.lastPathComponent).path
            downloads.wait(for: task.taskIdentifier)
            // Returns once the task is written to courierd's socket: courierd journals it before it says anything
            // of it, and a refusal reaches the delegate. A background rule the task breaks is known at once.
            task.resume()
            if let error = task.error {
                say("\(url): not handed to courierd: \(error)")
                exit(1)
            }
            say("task \(task.taskIdentifier): \(url) -> \(task.taskDescription ?? "")")
        }
    }

    /// Launched by courierd for the session's events: the session is made again; its delegate hears what it missed.
    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        say("relaunched for \(identifier) (pid \(getpid()))")
        downloads.keep(completionHandler)
        session = Session(configuration: .background(withIdentifier: identifier), delegate: downloads)
    }
}

Application.main(delegate: Downloader())
