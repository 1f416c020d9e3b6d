/// A data task that sends a body from `Data` or from a file; the response body arrives like a data task's.
///
/// `@unchecked Sendable` for the reason given on ``SessionTask``.
public final class UploadTask: DataTask, @unchecked Sendable {}
