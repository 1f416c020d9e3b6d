import Foundation

/// What a task may answer for a held response.
enum TransferDecision: Codable, Sendable, Equatable {
    /// Deliver the body as the request said.
    case allow
    /// End the transfer; its COMPLETE reports `cancelled`.
    case cancel
    /// Write the rest of the body to the file at `path` (a data task that became a download).
    case toFile(path: String)
    /// Answers ``TransferEvent/Payload/delayedStart``: begin the delayed transfer, with this request instead of the
    /// task's when one is given (`.useNewRequest`).
    case beginDelayed(TaskRequest?)
}

/// The seam between the task layer and what runs transfers: the in-process engine (``Engine``) or, for background
/// sessions, the daemon.
///
/// A backend serves one session. Every method is thread-safe and returns without waiting for the network. Events
/// reach the handler the backend was created with, in batches, on a thread of the backend's; the events of one
/// transfer are in order. Commands for a transfer that already completed are ignored.
protocol TransferBackend: AnyObject, Sendable {
    /// Starts one exchange. Returns the transfer's handle, or why it was refused before any network activity
    /// (an unreadable upload file, a staging file that cannot be opened, a URL the backend cannot use).
    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError>
    /// Ends the transfer; its COMPLETE reports `cancelled` (or how it ended, if it ended first). With
    /// `producingResumeData` (a download's `cancel(byProducingResumeData:)`), a backend that keeps the partial file
    /// itself (courierd) puts the resume data naming it in the COMPLETE's error; the in-process engine leaves the
    /// file to the task, which makes the resume data.
    func cancel(_ transfer: UInt64, producingResumeData: Bool)
    /// Stops moving bytes until ``resume(_:)``; timeouts keep running.
    func pause(_ transfer: UInt64)
    func resume(_ transfer: UInt64)
    /// Answers a held RESPONSE. Returns an error when the decision could not be carried out (the file of
    /// `.toFile` cannot be opened); the transfer is then cancelled.
    @discardableResult
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError?
    /// More of a `.streamed` body (``TransferSpec/Body/streamed(length:)``), in order, then its end: false when the
    /// backend cannot take it (a backend without streamed bodies, or out of memory). The transfer's `sent` counts
    /// what went out of it.
    func supply(_ transfer: UInt64, _ bytes: Data, end: Bool) -> Bool
}

/// Receives a backend's event batches.
typealias TransferEventHandler = @Sendable ([TransferEvent]) -> Void
