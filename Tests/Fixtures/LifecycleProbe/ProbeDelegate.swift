import CourierLifecycle
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Prints every transition as a line (`did-become-active`, `did-enter-background`, …) and does what
/// the scenario says when it enters the background.
final class ProbeDelegate: ApplicationDelegate {
    let options: ProbeOptions

    init(options: ProbeOptions) {
        self.options = options
    }

    func applicationDidFinishLaunching(_ application: Application, options: LaunchOptions) {
        let reason = options.backgroundLaunchReason?.rawValue ?? "none"
        emit("did-finish-launching background=\(options.launchedIntoBackground) reason=\(reason)")
    }

    func applicationDidBecomeActive(_ application: Application) {
        emit("did-become-active state=\(application.applicationState)")
    }

    func applicationWillResignActive(_ application: Application) {
        emit("will-resign-active")
    }

    func applicationDidEnterBackground(_ application: Application) {
        let remaining = Int(application.backgroundTimeRemaining * 1000)
        emit("did-enter-background state=\(application.applicationState) remaining-ms=\(remaining)")
        switch self.options.scenario {
        case .idle:
            break
        case .finishingTask:
            self.beginFinishingTask(application)
        case .neverEndingTask:
            let id = application.beginBackgroundTask(withName: "probe-stuck") {
                emit("expiration name=probe-stuck")
            }
            emit("task-begin name=probe-stuck id=\(id)")
        case .slowEnterBackground:
            usleep(UInt32(self.options.slowMilliseconds) * 1000)
            emit("did-enter-background-returned")
        }
    }

    func applicationWillEnterForeground(_ application: Application) {
        emit("will-enter-foreground")
    }

    func applicationWillTerminate(_ application: Application) {
        emit("will-terminate")
    }

    /// The iOS idiom: begin, hand the work to another thread, end there (or on expiration).
    private func beginFinishingTask(_ application: Application) {
        var id = BackgroundTaskIdentifier.invalid
        id = application.beginBackgroundTask(withName: "probe-work") {
            emit("expiration name=probe-work")
            application.endBackgroundTask(id)
        }
        emit("task-begin name=probe-work id=\(id)")
        let taskID = id
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(self.options.taskMilliseconds)) {
            emit("task-end name=probe-work id=\(taskID)")
            application.endBackgroundTask(taskID)
        }
    }
}
