package import Foundation

/// The rules of a background session's tasks (Apple's: downloads and uploads from a file, events to the delegate;
/// Courier's besides: uploads from `Data` and data tasks),
/// said once: the app's `DaemonBackend` checks them before a task leaves the process, courierd's admission again
/// before it journals one, and both refuse with these errors.
package enum BackgroundTaskRules {
    /// A task whose body goes neither to a file nor, for a data task, back to the app as data (no task of the public
    /// API makes one: a refusal of malformed submissions).
    package static func dataTaskRefused(_ url: URL?) -> CourierError {
        CourierError(
            .unsupportedInBackgroundSession,
            "background sessions run download, upload and data tasks that report to the delegate",
            failingURL: url
        )
    }

    /// An upload whose body is neither a file nor `Data` (a stream, which cannot be kept for courierd).
    package static func uploadNotFromFile(_ url: URL?) -> CourierError {
        CourierError(
            .unsupportedInBackgroundSession,
            "background sessions upload from a file or from Data, not from a stream",
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
