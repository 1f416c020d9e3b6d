/// A task whose response body arrives in memory: to a ``SessionDataDelegate`` in batches, to a completion
/// handler, or to an async caller.
///
/// `@unchecked Sendable` for the reason given on ``SessionTask``.
public class DataTask: SessionTask, @unchecked Sendable {}
