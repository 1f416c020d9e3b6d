/// Which hop of which task a transfer belongs to, stable across processes.
///
/// A backend serves one session, so the task identifier (the session's registry key) and the hop number name a
/// transfer completely. The in-process backend packs them into the engine's tag; the daemon backend sends them as
/// they are.
package struct TransferID: Codable, Sendable, Hashable {
    /// The task's key in its session's registry (its `taskIdentifier`, also after `.becomeDownload`).
    package var task: Int
    /// The task's hop: 1 for the first exchange, then one more per redirect or authentication retry.
    package var hop: Int

    package init(task: Int, hop: Int) {
        self.task = task
        self.hop = hop
    }
}
