// An app with a background session, for the end-to-end test of courierd (Tests/CourierDaemonTests): started in the
// foreground it creates background tasks and waits to be killed (launched into the background for a fetch, it creates
// them there); relaunched by courierd (COURIER_BACKGROUND_LAUNCH=urlsession:<identifier>) it recreates the session, records every delegate call in its
// log (one JSON object a line), copies each finished download beside the log, and exits once every task ended.
//
// With --stay, the app started by hand is not killed: it keeps its one session until every task it made ended
// (whatever happens to courierd meanwhile), then exits.
//
//   BackgroundProbe --runtime DIR --state DIR --log FILE [--download URL]... [--upload URL=FILE]... [--stay]
import Courier
import CourierLifecycle
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let identifier = "com.example.probe.background"

/// The descriptors this process was started with besides standard input, output and error, as "fd -> target" (read
/// before the process opens any of its own; the directory being listed is left out). courierd passes none on.
let inheritedDescriptors: [String] = {
    let directory = "/proc/self/fd"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.compactMap { name -> String? in
        guard let number = Int(name), number > 2,
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(name)"),
            !target.hasPrefix("/proc/")
        else {
            return nil
        }
        return "\(number) -> \(target)"
    }.sorted()
}()

struct Options {
    var runtime = ""
    var state = ""
    var log = ""
    var downloads: [URL] = []
    var uploads: [(URL, String)] = []
    var stay = false
    /// Relaunched: after the replay, hand the completion back but do not terminate (the application suspends itself,
    /// as an iOS app does, and stays suspended holding its session).
    var linger = false

    init(_ arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--stay" {
                stay = true
                continue
            }
            if argument == "--linger" {
                linger = true
                continue
            }
            let value = iterator.next() ?? ""
            switch argument {
            case "--runtime": runtime = value
            case "--state": state = value
            case "--log": log = value
            case "--download": downloads.append(URL(string: value)!)
            case "--upload":
                // URL=FILE, split at the last "=" (the URL's query has some).
                let split = value.range(of: "=", options: .backwards)!
                uploads.append((URL(string: String(value[..<split.lowerBound]))!, String(value[split.upperBound...])))
            default: fatalError("unknown argument \(argument)")
            }
        }
    }

    /// The session configuration; the relaunch command is this probe with the same directories and log only.
    var configuration: SessionConfiguration {
        var configuration = SessionConfiguration.background(withIdentifier: identifier)
        configuration.daemonPaths = DaemonPaths(
            runtimeDirectory: URL(fileURLWithPath: runtime),
            stateDirectory: URL(fileURLWithPath: state)
        )
        configuration.backgroundLaunchCommand = [CommandLine.arguments[0], "--runtime", runtime, "--state", state, "--log", log]
        return configuration
    }
}

/// Appends one JSON line to the log (O_APPEND: whole lines, also across the killed and the relaunched process).
final class Log: Sendable {
    let path: String

    init(path: String) {
        self.path = path
    }

    func write(_ fields: [String: Any]) {
        guard var line = try? JSONSerialization.data(withJSONObject: fields, options: .sortedKeys) else {
            return
        }
        line.append(0x0A)
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        _ = line.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }
}

/// Records the background session's delegate calls; terminates the app once the replay is over and no task is left.
final class Recorder: SessionDownloadDelegate, SessionDataDelegate, @unchecked Sendable {
    // @unchecked Sendable: `completion` and `replayOver` are touched only on the session's serial delegate queue.
    let log: Log
    let directory: String
    let linger: Bool
    var completion: (@Sendable () -> Void)?
    var replayOver = false

    init(log: Log, linger: Bool = false) {
        self.log = log
        self.linger = linger
        directory = (log.path as NSString).deletingLastPathComponent
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        let copy = "\(directory)/task-\(downloadTask.taskIdentifier).bin"
        try? FileManager.default.removeItem(atPath: copy)
        try? FileManager.default.copyItem(atPath: location.path, toPath: copy)
        log.write(["event": "finished", "task": downloadTask.taskIdentifier, "copy": copy, "pid": Int(getpid())])
    }

    func urlSession(_ session: Session, dataTask: DataTask, didReceive data: Data) {
        log.write(["event": "data", "task": dataTask.taskIdentifier, "body": String(decoding: data, as: UTF8.self)])
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        var fields: [String: Any] = ["event": "completed", "task": task.taskIdentifier, "pid": Int(getpid())]
        if let error {
            fields["error"] = "\(error)"
        }
        if let status = (task.response as? HTTPURLResponse)?.statusCode {
            fields["status"] = status
        }
        log.write(fields)
        finishIfDone(session, ending: task)
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: Session) {
        log.write(["event": "didFinishEvents", "pid": Int(getpid())])
        replayOver = true
        finishIfDone(session, ending: nil)
    }

    /// Calling the completion handler lets the application be suspended: this probe calls it only once every task
    /// ended (the events of tasks still running come live over the same connection), then exits.
    private func finishIfDone(_ session: Session, ending task: SessionTask?) {
        let left = session.allTasks.filter { $0 !== task }
        guard replayOver, left.isEmpty else {
            return
        }
        if linger {
            // Handing the completion back lets the application suspend itself: logged first.
            log.write(["event": "idle", "pid": Int(getpid())])
            completion?()
            completion = nil
            return
        }
        log.write(["event": "exit", "pid": Int(getpid())])
        completion?()
        completion = nil
        Application.shared.terminate()
    }
}

final class ProbeApplication: ApplicationDelegate {
    func applicationWillTerminate(_ application: Application) {
        recorder.log.write(["event": "terminated", "pid": Int(getpid())])
    }

    let options: Options
    let recorder: Recorder
    var session: Session?

    init(options: Options) {
        self.options = options
        recorder = Recorder(log: Log(path: options.log), linger: options.linger)
    }

    /// Launched into the background for another reason (`COURIER_BACKGROUND_LAUNCH=fetch`): the tasks it creates
    /// are created in the background.
    func applicationDidFinishLaunching(_ application: Application, options launch: LaunchOptions) {
        guard launch.launchedIntoBackground, launch.backgroundLaunchReason?.urlSessionIdentifier == nil else {
            return
        }
        let session = Session(configuration: options.configuration, delegate: recorder)
        self.session = session
        for url in options.downloads {
            session.downloadTask(with: url).resume()
        }
        recorder.log.write(["event": "journaled", "count": options.downloads.count, "pid": Int(getpid())])
    }

    func application(
        _ application: Application,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        recorder.log.write(
            ["event": "relaunched", "session": identifier, "pid": Int(getpid()), "inherited": inheritedDescriptors]
        )
        recorder.completion = completionHandler
        session = Session(configuration: options.configuration, delegate: recorder)
        recorder.log.write(["event": "tasks", "count": session?.allTasks.count ?? -1])
    }
}

_ = inheritedDescriptors
let options = Options(Array(CommandLine.arguments.dropFirst()))
if LaunchOptions.fromProcessEnvironment().launchedIntoBackground {
    Application.main(delegate: ProbeApplication(options: options))
}

// Started by hand: create the tasks, say so, and wait to be killed.
let log = Log(path: options.log)
// What this run hears is logged too (it is meant to be killed before any task ends, unless it stays).
let session = Session(configuration: options.configuration, delegate: Recorder(log: log))
var created = 0
for url in options.downloads {
    session.downloadTask(with: url).resume()
    created += 1
}
for (url, file) in options.uploads {
    var request = URLRequest(url: url)
    request.httpMethod = "PUT"
    let task = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: file))
    task.resume()
    if let error = task.error {
        log.write(["event": "refused", "task": task.taskIdentifier, "error": "\(error)"])
    }
    created += 1
}
log.write(["event": "journaled", "count": created, "pid": Int(getpid())])
if options.stay {
    // The session drops a task once its completion was delivered.
    while !session.allTasks.isEmpty {
        usleep(100_000)
    }
    // After the delegate calls already queued (the last completions).
    let drained = DispatchSemaphore(value: 0)
    session.getAllTasks { _ in drained.signal() }
    drained.wait()
    log.write(["event": "exit", "pid": Int(getpid())])
    exit(0)
}
while true {
    sleep(60)
}
