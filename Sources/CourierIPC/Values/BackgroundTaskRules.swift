package import Foundation

/// The rules of a background session's tasks (Apple's: downloads and uploads from a file, events to the delegate),
/// said once: the app's `DaemonBackend` checks them before a task leaves the process, courierd's admission again
/// before it journals one, and both refuse with these errors.
package enum BackgroundTaskRules {
    /// A data task (or a download to memory) in a background session.
    package static func dataTaskRefused(_ url: URL?) -> CourierError {
        CourierError(
            .unsupportedInBackgroundSession,
            "background sessions run download tasks and upload tasks, not data tasks",
            failingURL: url
        )
    }

    /// An upload whose body is not a file.
    package static func uploadNotFromFile(_ url: URL?) -> CourierError {
        CourierError(
            .unsupportedInBackgroundSession,
            "background sessions upload from a file only (uploadTask(with:fromFile:))",
            failingURL: url
        )
    }

    /// A task made with a completion handler.
    package static func completionHandlerRefused(_ url: URL?) -> CourierError {
        CourierError(
            .unsupportedInBackgroundSession,
            "completion handlers are not supported in background sessions; use the session delegate",
            failingURL: url
        )
    }
}
