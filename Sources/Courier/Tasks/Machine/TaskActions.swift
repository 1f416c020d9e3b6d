/// The actions one input produced, in order.
///
/// Most inputs produce none, one or two actions; those are kept inline, so applying an input allocates nothing on
/// the hot path (one array per input cost 4 allocations per small request). A third action and later ones go to an
/// array.
struct TaskActions: Sendable {
    private var first: TaskAction?
    private var second: TaskAction?
    private var more: [TaskAction] = []

    init() {}

    var isEmpty: Bool {
        first == nil
    }

    mutating func append(_ action: TaskAction) {
        if first == nil {
            first = action
        } else if second == nil {
            second = action
        } else {
            more.append(action)
        }
    }

    /// Calls `body` with each action in order, without copying the list.
    func forEach(_ body: (borrowing TaskAction) -> Void) {
        guard let first else {
            return
        }
        body(first)
        guard let second else {
            return
        }
        body(second)
        for action in more {
            body(action)
        }
    }

    /// The actions as an array (tests).
    var elements: [TaskAction] {
        var elements: [TaskAction] = []
        forEach { elements.append(copy $0) }
        return elements
    }
}
